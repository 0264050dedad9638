package analysis

import "slices"

// conceptGroups are words that name the same thing in a request for a tool,
// written for this project from the vocabulary of tool catalogs and the
// requests people make of them. The local embedder adds a shared concept
// feature for every word of a group, so "apartment" in a query meets
// "rental" in a description. Groups are kept narrow: a group that is too
// broad ("get" with "find") blurs tools that differ by exactly that word.
var conceptGroups = [][]string{
	// actions
	{"create", "add", "new", "make", "open", "start", "compose", "draft", "generate"},
	{"delete", "remove", "erase", "drop", "discard", "purge", "trash"},
	{"search", "find", "lookup", "look", "locate", "discover", "query", "seek", "hunt"},
	{"send", "post", "message", "notify", "dm", "ping", "tell", "announce", "reply"},
	{"update", "edit", "change", "modify", "rename", "move", "reschedule", "adjust", "set"},
	{"list", "browse", "enumerate", "show", "overview", "catalog"},
	{"read", "view", "open", "fetch", "retrieve", "contents", "display"},
	{"buy", "purchase", "shop", "shopping", "order", "checkout", "cart", "store", "product", "deal", "price", "cheap", "discount", "coupon", "sale", "bargain"},
	{"book", "reserve", "reservation", "booking", "schedule", "appointment"},
	{"translate", "translation", "language", "interpret"},
	{"summarize", "summary", "digest", "tldr", "brief", "recap"},
	{"calculate", "compute", "math", "calculator", "formula", "equation", "arithmetic"},
	{"compare", "comparison", "versus", "vs", "difference"},
	{"recommend", "recommendation", "suggest", "suggestion", "advice", "advise", "idea", "ideas"},
	{"review", "rating", "ratings", "reviews", "opinion", "feedback", "testimonial"},
	{"analyze", "analysis", "analytics", "insight", "insights", "statistics", "stats", "metrics", "report"},
	{"convert", "conversion", "transform", "unit", "units"},
	{"upload", "attach", "import"},
	{"download", "export", "save", "backup"},
	{"share", "permission", "access", "invite", "collaborate"},
	{"cancel", "abort", "stop", "terminate", "kill", "halt"},
	{"track", "tracking", "monitor", "status", "progress", "poll"},
	// domains
	{"apartment", "apartments", "house", "housing", "home", "rent", "rental", "renting", "lease", "tenant", "landlord", "condo", "property", "properties", "realestate", "estate", "mortgage"},
	{"food", "restaurant", "restaurants", "meal", "dish", "dishes", "cuisine", "eat", "eating", "dining", "dinner", "lunch", "breakfast", "hungry", "recipe", "cook", "cooking", "menu"},
	{"flight", "flights", "airline", "plane", "airport", "fly", "airfare"},
	{"travel", "trip", "vacation", "holiday", "tour", "tourist", "itinerary", "destination", "journey", "sightseeing"},
	{"hotel", "hotels", "accommodation", "lodging", "stay", "hostel", "resort", "airbnb"},
	{"job", "jobs", "career", "employment", "hiring", "hire", "recruit", "resume", "cv", "interview", "vacancy", "salary"},
	{"weather", "forecast", "temperature", "rain", "climate", "storm", "sunny"},
	{"news", "headline", "headlines", "article", "articles", "journalism", "press", "breaking"},
	{"stock", "stocks", "share", "shares", "market", "invest", "investment", "investing", "portfolio", "ticker", "trading", "crypto", "bitcoin", "finance", "financial"},
	{"money", "payment", "pay", "invoice", "billing", "bill", "credit", "credits", "budget", "spend", "cost", "expense", "usage"},
	{"music", "song", "songs", "playlist", "album", "artist", "band", "lyrics", "spotify"},
	{"movie", "movies", "film", "films", "cinema", "tv", "show", "series", "episode", "streaming"},
	{"video", "videos", "clip", "clips", "youtube", "stream"},
	{"image", "images", "picture", "pictures", "photo", "photos", "photograph", "drawing", "art", "illustration", "visual"},
	{"email", "mail", "inbox", "gmail", "outlook"},
	{"calendar", "meeting", "meetings", "event", "events", "agenda", "invitation", "invite", "sync", "1:1"},
	{"document", "documents", "doc", "docs", "file", "files", "pdf", "spreadsheet", "sheet"},
	{"code", "repository", "repo", "repos", "github", "source", "programming", "developer", "commit", "branch", "pull"},
	{"ticket", "tickets", "issue", "issues", "bug", "bugs", "incident", "jira"},
	{"health", "medical", "medicine", "doctor", "symptom", "symptoms", "disease", "illness", "clinic", "hospital", "drug", "drugs", "pharmacy"},
	{"fitness", "workout", "exercise", "gym", "training", "running", "yoga", "diet", "nutrition", "calorie", "calories"},
	{"car", "cars", "vehicle", "vehicles", "auto", "automobile", "dealer", "driving"},
	{"pet", "pets", "dog", "dogs", "cat", "cats", "puppy", "animal", "animals"},
	{"game", "games", "gaming", "play", "puzzle", "trivia", "quiz"},
	{"learn", "learning", "course", "courses", "education", "tutorial", "study", "studying", "class", "lesson", "teach", "teacher", "school", "university", "student"},
	{"research", "paper", "papers", "academic", "scholar", "science", "scientific", "study", "journal", "publication"},
	{"write", "writing", "writer", "essay", "copywriting", "copy", "blog", "content", "story"},
	{"seo", "keyword", "keywords", "ranking", "website", "traffic", "optimize", "optimization", "search engine"},
	{"sports", "sport", "football", "soccer", "basketball", "baseball", "nba", "nfl", "team", "match", "league", "player"},
	{"chat", "slack", "channel", "conversation", "dm", "teams"},
	{"database", "sql", "table", "tables", "query", "postgres", "mysql", "row", "rows", "column"},
	{"statistical", "statistically", "significant", "significance", "hypothesis", "pvalue", "ttest", "test"},
	{"legal", "law", "lawyer", "contract", "attorney", "court"},
	{"map", "maps", "location", "directions", "route", "navigation", "nearby", "address", "place", "places"},
}

// concepts maps a stemmed word to its groups' concept ids.
var concepts = func() map[string][]string {
	m := map[string][]string{}
	for _, g := range conceptGroups {
		id := "c:" + g[0]
		for _, w := range g {
			for _, t := range Words(w) {
				t = Stem(t)
				if !slices.Contains(m[t], id) {
					m[t] = append(m[t], id)
				}
			}
		}
	}
	return m
}()
