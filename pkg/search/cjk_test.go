package search

import (
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
)

// TestCJKQueries: descriptions in Chinese, Japanese, Korean, Hindi and
// Thai are found by words inside them, as English ones are. Chinese and Japanese have no
// spaces between words, so each run of their characters read as one token
// matched nothing but itself: before, every query here but the Korean
// one found nothing by keyword, and hybrid put the right tool first for
// three of the eight.
func TestCJKQueries(t *testing.T) {
	cat := catalogOf(t, []catalog.Tool{
		{Server: "im", Name: "send_message", Description: "向指定频道发送一条消息，可附带文件"},
		{Server: "im", Name: "list_channels", Description: "列出当前工作区中的所有频道"},
		{Server: "im", Name: "search_history", Description: "按关键词搜索历史聊天记录"},
		{Server: "map", Name: "geocode", Description: "将结构化地址转换为经纬度坐标"},
		{Server: "map", Name: "route", Description: "规划驾车或步行的出行路线，返回距离和时间"},
		{Server: "map", Name: "weather", Description: "查询指定城市的实时天气和未来预报"},
		{Server: "files", Name: "upload", Description: "ファイルをクラウドストレージにアップロードする"},
		{Server: "files", Name: "remove", Description: "指定したファイルを完全に削除する"},
		{Server: "files", Name: "share", Description: "파일 공유 링크를 만들어 다른 사용자에게 보냅니다"},
		{Server: "chat", Name: "send", Description: "किसी चैनल में संदेश भेजें"},
		{Server: "chat", Name: "channels", Description: "कार्यक्षेत्र के सभी चैनलों की सूची दिखाएँ"},
		{Server: "chat", Name: "thai_send", Description: "ส่งข้อความไปยังช่องที่ระบุ"},
		{Server: "chat", Name: "thai_weather", Description: "ดูพยากรณ์อากาศของเมือง"},
	})
	svc := New(Config{Embedder: embedding.NewLocal(256), Version: "test", QueryTimeout: time.Second})
	if _, err := svc.Build(t.Context(), &Setup{Catalog: cat}); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ query, want string }{
		{"发送消息", "im/send_message"},
		{"天气预报", "map/weather"},
		{"地址转坐标", "map/geocode"},
		{"规划路线", "map/route"},
		{"搜索聊天记录", "im/search_history"},
		{"ファイルを削除", "files/remove"},
		{"アップロード", "files/upload"},
		{"공유 링크", "files/share"},
		// Devanagari's vowel signs split every word before; Thai, like
		// Chinese, has no spaces.
		{"चैनलों की सूची", "chat/channels"},
		{"संदेश भेजें", "chat/send"},
		{"ข้อความ", "chat/thai_send"},
		{"พยากรณ์อากาศ", "chat/thai_weather"},
	}
	for _, mode := range []Mode{ModeKeyword, ModeHybrid} {
		for _, tt := range tests {
			res := mustSearch(t, svc, Request{Query: tt.query, Mode: mode, TopK: ptr(3)})
			if got := ids(res.Tools); len(got) == 0 || got[0] != tt.want {
				t.Errorf("%s %q: %v, want %s first", mode, tt.query, got, tt.want)
			}
			if mode == ModeHybrid && (res.Confident == nil || !*res.Confident || res.NoMatch) {
				t.Errorf("%s %q: confident %v, no_match %v", mode, tt.query, res.Confident, res.NoMatch)
			}
		}
	}
	// What the catalog has nothing for reads as absent, as in English.
	for _, q := range []string{"订一张去北京的机票", "股票价格查询"} {
		if res := mustSearch(t, svc, Request{Query: q, TopK: ptr(3)}); !res.NoMatch || res.Confident == nil || *res.Confident {
			t.Errorf("%q: confident %v, no_match %v; want no match", q, res.Confident, res.NoMatch)
		}
	}
}
