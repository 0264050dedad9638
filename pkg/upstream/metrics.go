package upstream

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsearch/toolsearch/pkg/tlsfiles"
)

// The Manager is a prometheus.Collector: each scrape reads every
// upstream's health as status reports it, so /metrics and the status page
// never disagree. Labels are upstream names from the operator's config,
// never anything a caller or an upstream sends.
var (
	upDesc = prometheus.NewDesc("toolsearch_upstream_up",
		"1 while the upstream's last tools/list or call succeeded (state connected), else 0.", []string{"upstream"}, nil)
	breakerDesc = prometheus.NewDesc("toolsearch_upstream_breaker",
		"The upstream's circuit breaker: 1 for its current state (closed, open, half-open), 0 for the others.", []string{"upstream", "state"}, nil)
	listChangedDesc = prometheus.NewDesc("toolsearch_upstream_list_changed",
		"How the upstream's tool changes reach toolsearch: 1 for the current way (heard: at once; no_stream, not_offered: at the next refresh; unknown: no session), 0 for the others.",
		[]string{"upstream", "state"}, nil)
	toolsDesc = prometheus.NewDesc("toolsearch_upstream_tools",
		"Tools the upstream offers, from its last good listing.", []string{"upstream"}, nil)
	staleDesc = prometheus.NewDesc("toolsearch_upstream_stale",
		"1 while the upstream's tools are from an earlier listing because the latest failed.", []string{"upstream"}, nil)
	lastSuccessDesc = prometheus.NewDesc("toolsearch_upstream_last_success_timestamp_seconds",
		"Unix time of the upstream's last successful listing or call; 0 before the first.", []string{"upstream"}, nil)
	listsDesc = prometheus.NewDesc("toolsearch_upstream_lists_total",
		"tools/list refreshes of the upstream (connect included), by result: ok, error, too_large.", []string{"upstream", "result"}, nil)
	callsDesc = prometheus.NewDesc("toolsearch_upstream_calls_total",
		"call_tool forwards to the upstream, by result: ok, rpc_error (the upstream answered with an error), error (transport failure), "+
			"unavailable (breaker open or unreachable), timeout (slow tool; the upstream answers a ping), too_large (answer over a bound), cancelled (by the caller).",
		[]string{"upstream", "result"}, nil)
	resumesDesc = prometheus.NewDesc("toolsearch_upstream_resumes_total",
		"Streams of the upstream asked for again with Last-Event-ID after they ended early, by stream: call (a call's or a listing's answer) or session (the session stream).",
		[]string{"upstream", "stream"}, nil)
	redialsDesc = prometheus.NewDesc("toolsearch_upstream_redialed_calls_total",
		"Calls that met a refused connection and waited for the upstream to listen again (a restart), whatever then became of them.", []string{"upstream"}, nil)
	sessionsLostDesc = prometheus.NewDesc("toolsearch_upstream_sessions_lost_total",
		"Sessions the upstream or the network ended while in use (a session stream that could not be resumed; at protocol 2026-07-28 a listening stream that ended): each time a session was made again and the tools listed.",
		[]string{"upstream"}, nil)
	// The client certificate's expiry, in the family the provider's shares
	// (tlsfiles.ExpiryMetric): server "upstream/NAME".
	certExpiryDesc   = prometheus.NewDesc(tlsfiles.ExpiryMetric, tlsfiles.ExpiryHelp, []string{"server"}, nil)
	callsFailingDesc = prometheus.NewDesc("toolsearch_upstream_calls_failing",
		"1 while the latest call to the upstream that said anything of its health failed in transport.", []string{"upstream"}, nil)
)

var listChangedStates = []string{ListChangedHeard, ListChangedNoStream, ListChangedNotOffered, ListChangedUnknown}

// Describe implements prometheus.Collector.
func (m *Manager) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{upDesc, breakerDesc, listChangedDesc, toolsDesc, staleDesc, lastSuccessDesc, listsDesc, callsDesc, callsFailingDesc, resumesDesc, redialsDesc, sessionsLostDesc, certExpiryDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Manager) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	flag := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	for i, st := range m.Status() {
		u := m.ups[i]
		gauge(upDesc, flag(st.State == "connected"), st.Name)
		for _, state := range []string{Closed, Open, HalfOpen} {
			gauge(breakerDesc, flag(st.Breaker == state), st.Name, state)
		}
		for _, state := range listChangedStates {
			gauge(listChangedDesc, flag(st.ListChanged == state), st.Name, state)
		}
		gauge(toolsDesc, float64(st.Tools), st.Name)
		gauge(staleDesc, flag(st.Stale), st.Name)
		gauge(callsFailingDesc, flag(st.CallsFailing), st.Name)
		var last float64
		if st.LastSuccess != nil {
			last = float64(st.LastSuccess.UnixNano()) / 1e9
		}
		gauge(lastSuccessDesc, last, st.Name)
		if u.tls != nil {
			if exp, ok := u.tls.Expiry(); ok {
				gauge(certExpiryDesc, float64(exp.Unix()), "upstream/"+st.Name)
			}
		}
		counter := func(d *prometheus.Desc, v uint64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
		}
		counter(resumesDesc, u.streams.callResumes.Load(), st.Name, "call")
		counter(resumesDesc, u.streams.sessionResumes.Load(), st.Name, "session")
		counter(redialsDesc, u.streams.redialed.Load(), st.Name)
		counter(sessionsLostDesc, u.streams.sessionsLost.Load(), st.Name)
		u.mu.Lock()
		for _, r := range listResults {
			ch <- prometheus.MustNewConstMetric(listsDesc, prometheus.CounterValue, float64(u.lists[r]), st.Name, r)
		}
		for _, r := range callResults {
			ch <- prometheus.MustNewConstMetric(callsDesc, prometheus.CounterValue, float64(u.calls[r]), st.Name, r)
		}
		u.mu.Unlock()
	}
}
