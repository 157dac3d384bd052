package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/memstream/memstream/recall"
	"github.com/memstream/memstream/resolve"
	"github.com/memstream/memstream/store"
	"github.com/memstream/memstream/text"
)

// BankConfig describes a synthetic bank for `memstream bench recall` and
// `bench reflect`.
type BankConfig struct {
	// BankID names the bank; it must not exist yet.
	BankID string
	// Facts is how many facts to load.
	Facts int
	// Queries is how many queries to generate against the bank.
	Queries int
	// Seed makes the corpus repeatable: the same seed gives the same text.
	Seed uint64
	// Now is the query timestamp; facts are mentioned over the two years
	// before it.
	Now time.Time
	// Reuse skips the load when the bank already exists (left by an
	// earlier run with the same seed and size, e.g. with --keep): for
	// profiling recall without waiting for the load again.
	Reuse bool
}

// Bank is a loaded synthetic bank and the queries to ask it.
type Bank struct {
	BankID   string
	Facts    int
	Entities int
	Links    int
	Queries  []recall.Request
}

// Word lists of the synthetic corpus. The facts are what an assistant
// remembers of a user's chats: people with jobs, homes and habits, orders
// with codes, trips and events with dates, some of them in Chinese, so that
// every arm has realistic work: names for the graph, codes for the keyword
// arm, paraphrases for the semantic one, and dates for the temporal one.
var (
	benchFirst = []string{"Maria", "James", "Aisha", "Kenji", "Sofia", "Liam", "Priya", "Noah", "Elena", "Omar",
		"Chloe", "Mateo", "Hannah", "Ravi", "Grace", "Lucas", "Fatima", "Ethan", "Yuki", "Daniel",
		"Olivia", "Samuel", "Leila", "Victor", "Nora", "Hugo", "Amara", "Felix", "Ingrid", "Diego",
		"Zara", "Tomas", "Mei", "Arjun", "Clara", "Jonas", "Alice", "Bruno", "Esther", "Pavel"}
	benchLast = []string{"Lopez", "Smith", "Khan", "Tanaka", "Rossi", "Murphy", "Patel", "Becker", "Novak", "Haddad",
		"Dubois", "Garcia", "Schmidt", "Iyer", "Kim", "Silva", "Rahman", "Walker", "Sato", "Cohen",
		"Jensen", "Okafor", "Moreau", "Petrov", "Larsen", "Costa", "Mensah", "Weber", "Berg", "Ortiz",
		"Chen", "Nakamura", "Fischer", "Ali", "Santos", "Hughes", "Kowalski", "Andersson", "Reyes", "Volkov"}
	benchCNSurname = []string{"张", "王", "李", "刘", "陈", "杨", "赵", "黄", "周", "吴"}
	benchCNGiven   = []string{"伟", "芳", "娜", "敏", "静", "丽", "强", "磊", "军", "洋"}
	benchCities    = []string{"Lisbon", "Toronto", "Osaka", "Nairobi", "Berlin", "Austin", "Melbourne", "Seoul",
		"Valencia", "Denver", "Porto", "Krakow", "Montreal", "Edinburgh", "Kyoto", "Lyon", "Oslo", "Dublin",
		"Santiago", "Hanoi", "Vienna", "Seattle", "Bogota", "Tallinn"}
	benchCNCities = []string{"深圳", "杭州", "成都", "上海", "北京", "南京", "武汉", "西安"}
	benchOrgs     = []string{"Northwind", "Globex", "Initech", "Umbrella Health", "Stark Logistics", "Acme Foods",
		"Blue Harbor Bank", "Tideway Energy", "Pinecone Labs", "Redwood Studios", "Orbit Telecom", "Helios Solar"}
	benchJobs = []string{"nurse", "software engineer", "architect", "chef", "teacher", "accountant", "photographer",
		"pilot", "data analyst", "veterinarian", "pharmacist", "product designer", "carpenter", "journalist"}
	benchHobbies = []string{"rock climbing", "watercolor painting", "birdwatching", "sourdough baking", "chess",
		"salsa dancing", "trail running", "pottery", "sailing", "beekeeping", "woodworking", "jazz piano",
		"urban sketching", "kayaking", "gardening", "astronomy"}
	benchFoods = []string{"peanuts", "shellfish", "gluten", "lactose", "strawberries", "sesame", "eggs", "soy"}
	benchItems = []string{"standing desk", "espresso machine", "road bike", "noise-cancelling headphones",
		"air purifier", "hiking boots", "camera lens", "office chair", "e-reader", "cast iron pan"}
	benchPlaces = []string{"farmers market", "climbing gym", "art museum", "dentist", "botanical garden",
		"hardware store", "concert hall", "library", "beach", "ramen shop", "yoga studio", "car workshop"}
	benchCNThings = []string{"咖啡店", "面馆", "书店", "健身房", "花店", "设计公司"}
	benchMonths   = []string{"January", "February", "March", "April", "May", "June", "July", "August",
		"September", "October", "November", "December"}
)

// benchPerson is an entity of the synthetic corpus.
type benchPerson struct {
	id       uuid.UUID
	name     string
	first    string
	kind     string
	cn       bool
	lastFact int // index of its latest fact so far, -1 before the first
	facts    int
}

// benchFact is one generated fact.
type benchFact struct {
	id        uuid.UUID
	typ       string
	text      string
	mentioned time.Time
	occurred  *time.Time
	tags      []string
	ents      []int // indexes into people
	code      string
}

// DocumentEmbedder embeds the bench bank's facts, which are stored
// (documents, not queries).
type DocumentEmbedder interface {
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
}

// LoadBank generates a synthetic bank, loads it with a store.BulkLoader
// and returns the queries to ask. The embedder is the one the Recaller
// will use, so the semantic arm sees vectors of the same model. Use a
// schema of its own: other banks' writes would stall behind the index
// rebuild.
func LoadBank(ctx context.Context, st *store.Store, emb DocumentEmbedder, cfg BankConfig, progress func(string)) (*Bank, error) {
	if cfg.Facts < 1 || cfg.Queries < 1 || cfg.BankID == "" {
		return nil, fmt.Errorf("bench bank: need a bank id, facts and queries, got %q, %d, %d", cfg.BankID, cfg.Facts, cfg.Queries)
	}
	if cfg.Now.IsZero() {
		cfg.Now = time.Now().UTC()
	}
	if progress == nil {
		progress = func(string) {}
	}
	if cfg.Reuse {
		b, err := loadBankRows(ctx, st, nil, emb, cfg)
		if err != nil || b != nil {
			if b != nil {
				progress(fmt.Sprintf("reusing bank %s of %d facts", cfg.BankID, b.Facts))
			}
			return b, err
		}
		cfg.Reuse = false
	}
	l, err := st.NewBulkLoader(ctx)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	progress(fmt.Sprintf("embedding and copying %d facts", cfg.Facts))
	b, err := loadBankRows(ctx, st, l, emb, cfg)
	if err != nil {
		return nil, err
	}
	if err := l.Finish(ctx, progress); err != nil {
		return nil, err
	}
	return b, nil
}

// loadBankRows generates one bank, embeds it and loads it through l,
// leaving the indexes to the caller. With cfg.Reuse it only regenerates
// the queries of a bank that is already there, and returns nil when it is
// not.
func loadBankRows(ctx context.Context, st *store.Store, l *store.BulkLoader, emb DocumentEmbedder, cfg BankConfig) (*Bank, error) {
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	people := benchPeople(cfg.BankID, cfg.Facts, rng)
	facts := benchFacts(cfg, people, rng)
	if cfg.Reuse {
		n, err := st.UnitCount(ctx, cfg.BankID)
		if err != nil {
			return nil, fmt.Errorf("bench bank: %w", err)
		}
		if n == int64(len(facts)) {
			b := bulkBank(cfg.BankID, people, facts, nil, rng)
			return &Bank{BankID: cfg.BankID, Facts: len(facts), Entities: len(people), Links: len(b.Links),
				Queries: benchQueries(cfg, people, facts, rng)}, nil
		}
		return nil, nil
	}
	vecs := make([][]float32, 0, len(facts))
	const embedBatch = 1024
	for i := 0; i < len(facts); i += embedBatch {
		texts := make([]string, 0, embedBatch)
		for _, f := range facts[i:min(i+embedBatch, len(facts))] {
			texts = append(texts, f.text)
		}
		vs, err := emb.EmbedDocuments(ctx, texts)
		if err != nil {
			return nil, fmt.Errorf("bench bank: embed: %w", err)
		}
		vecs = append(vecs, vs...)
	}
	b := bulkBank(cfg.BankID, people, facts, vecs, rng)
	if err := l.Load(ctx, b); err != nil {
		return nil, fmt.Errorf("bench bank: %w", err)
	}
	return &Bank{BankID: cfg.BankID, Facts: len(facts), Entities: len(people), Links: len(b.Links),
		Queries: benchQueries(cfg, people, facts, rng)}, nil
}

// benchPeople makes about one person per 40 facts (at least 40), and the
// cities and companies as entities too: places and organisations are
// mentioned by thousands of facts, which is what makes a graph walk costly.
func benchPeople(bank string, facts int, rng *rand.Rand) []benchPerson {
	n := min(max(facts/40, 40), len(benchFirst)*len(benchLast)+len(benchCNSurname)*len(benchCNGiven))
	seen := map[string]bool{}
	var out []benchPerson
	for len(out) < n {
		var p benchPerson
		if rng.IntN(10) == 0 {
			s, g := benchCNSurname[rng.IntN(len(benchCNSurname))], benchCNGiven[rng.IntN(len(benchCNGiven))]
			p = benchPerson{name: s + g, first: "老" + s, cn: true}
		} else {
			f, l := benchFirst[rng.IntN(len(benchFirst))], benchLast[rng.IntN(len(benchLast))]
			p = benchPerson{name: f + " " + l, first: f}
		}
		if seen[p.name] {
			continue
		}
		seen[p.name] = true
		p.kind = "person"
		out = append(out, p)
	}
	for _, c := range benchCities {
		out = append(out, benchPerson{name: c, kind: "place"})
	}
	for _, c := range benchCNCities {
		out = append(out, benchPerson{name: c, kind: "place", cn: true})
	}
	for _, o := range benchOrgs {
		out = append(out, benchPerson{name: o, kind: "organization"})
	}
	for i := range out {
		out[i].id = store.DeriveID(bank, "bench-entity", out[i].name)
		out[i].lastFact = -1
	}
	return out
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

// benchFacts writes the facts in mention order. People are drawn with a
// skew (a few people fill much of a user's memory) from the persons only.
func benchFacts(cfg BankConfig, people []benchPerson, rng *rand.Rand) []benchFact {
	nPersons := 0
	byName := make(map[string]int, len(people))
	for i, p := range people {
		if p.kind == "person" {
			nPersons++
		}
		byName[p.name] = i
	}
	span := 730 * 24 * time.Hour
	step := span / time.Duration(cfg.Facts)
	start := cfg.Now.Add(-span)
	out := make([]benchFact, cfg.Facts)
	for i := range out {
		u := rng.Float64()
		pi := int(u * u * float64(nPersons))
		p := &people[pi]
		f := benchFact{
			id:        store.DeriveID(cfg.BankID, "bench-fact", fmt.Sprint(i)),
			typ:       "world",
			mentioned: start.Add(time.Duration(i)*step + time.Duration(rng.Int64N(int64(step)))).Truncate(time.Second),
			ents:      []int{pi},
		}
		with := func(name string) string {
			if j, ok := byName[name]; ok {
				f.ents = append(f.ents, j)
			}
			return name
		}
		if p.cn {
			switch rng.IntN(3) {
			case 0:
				f.text = fmt.Sprintf("%s搬到%s工作了", p.name, with(pick(rng, benchCNCities)))
			case 1:
				f.text = fmt.Sprintf("%s在%s开了一家%s", p.name, with(pick(rng, benchCNCities)), pick(rng, benchCNThings))
			default:
				f.text = fmt.Sprintf("%s周末喜欢去%s", p.name, pick(rng, benchCNThings))
				f.typ = "experience"
			}
		} else {
			switch rng.IntN(10) {
			case 0:
				f.text = fmt.Sprintf("%s works as a %s at %s", p.name, pick(rng, benchJobs), with(pick(rng, benchOrgs)))
				f.tags = []string{"work"}
			case 1:
				f.text = fmt.Sprintf("%s moved to %s last %s for a new job", p.name, with(pick(rng, benchCities)), pick(rng, benchMonths))
			case 2:
				f.text = fmt.Sprintf("%s has been into %s for a few years", p.name, pick(rng, benchHobbies))
			case 3:
				f.text = fmt.Sprintf("%s is allergic to %s and carries medication", p.name, pick(rng, benchFoods))
				f.tags = []string{"health"}
			case 4:
				f.code = fmt.Sprintf("%c-%04d-%c%c", 'A'+rune(rng.IntN(26)), rng.IntN(10000), 'A'+rune(rng.IntN(26)), 'A'+rune(rng.IntN(26)))
				f.text = fmt.Sprintf("Order %s for a %s was shipped to %s", f.code, pick(rng, benchItems), p.name)
			case 5:
				f.text = fmt.Sprintf("The user went to the %s with %s", pick(rng, benchPlaces), p.first)
				f.typ = "experience"
			case 6:
				f.text = fmt.Sprintf("%s recommended a %s in %s", p.first, pick(rng, benchPlaces), with(pick(rng, benchCities)))
			case 7:
				f.text = fmt.Sprintf("The user had dinner with %s and talked about %s", p.name, pick(rng, benchHobbies))
				f.typ = "experience"
			case 8:
				f.text = fmt.Sprintf("%s flew to %s on flight %s%d to visit family", p.name, with(pick(rng, benchCities)),
					pick(rng, []string{"LH", "BA", "NH", "AC", "TP"}), 100+rng.IntN(900))
				f.tags = []string{"travel"}
			default:
				f.text = fmt.Sprintf("%s's birthday party is planned at the %s", p.first, pick(rng, benchPlaces))
			}
		}
		if f.typ == "experience" || rng.IntN(4) == 0 {
			t := f.mentioned.Add(-time.Duration(rng.IntN(72)) * time.Hour).Truncate(time.Hour)
			f.occurred = &t
		}
		out[i] = f
	}
	return out
}

// bulkBank builds the bank's rows. Links chain each entity's facts
// (entity), consecutive facts (temporal), and a few facts to the previous
// fact of the same person (causes). It advances rng, so the queries drawn
// after it are the same whether the bank is loaded or reused (vecs nil:
// rows without embeddings, which are not loaded).
func bulkBank(bank string, people []benchPerson, facts []benchFact, vecs [][]float32, rng *rand.Rand) store.BulkBank {
	b := store.BulkBank{BankID: bank}
	type linkKey struct {
		from, to int
		typ      string
	}
	seenLink := map[linkKey]bool{}
	link := func(from, to int, typ string, w float32) {
		k := linkKey{from, to, typ}
		if !seenLink[k] {
			seenLink[k] = true
			b.Links = append(b.Links, store.BulkLink{From: facts[from].id, To: facts[to].id, Type: typ, Weight: w})
		}
	}
	for i, f := range facts {
		var names []string
		for _, e := range f.ents {
			names = append(names, people[e].name)
		}
		tags := f.tags
		if tags == nil {
			tags = []string{}
		}
		var vec []float32
		if vecs != nil {
			vec = vecs[i]
		}
		bf := store.BulkFact{ID: f.id, Type: f.typ, Text: f.text, Context: "chat with the user", Embedding: vec,
			SearchAux: text.Aux(f.text, names), OccurredStart: f.occurred, MentionedAt: f.mentioned, Tags: tags,
			Metadata: map[string]string{}, DocumentID: "bench-doc-" + fmt.Sprint(i/20), SourceEventID: "bench-" + fmt.Sprint(i),
			IdemKey: fmt.Sprint(i)}
		for k, e := range f.ents {
			bf.EntityIDs = append(bf.EntityIDs, people[e].id)
			p := &people[e]
			if p.lastFact >= 0 {
				link(i, p.lastFact, "entity", 1)
				if k == 0 && rng.IntN(30) == 0 {
					link(p.lastFact, i, "causes", 0.9)
				}
			}
			p.lastFact = i
			p.facts++
		}
		b.Facts = append(b.Facts, bf)
		if i > 0 {
			link(i, i-1, "temporal", 0.5)
		}
	}
	now := time.Now()
	for _, p := range people {
		b.Entities = append(b.Entities, store.BulkEntity{ID: p.id, Name: p.name, Kind: p.kind, FirstSeen: now, LastSeen: now, Mentions: p.facts})
		seen := map[string]bool{}
		forms := []string{p.name}
		if p.first != "" {
			forms = append(forms, p.first)
		}
		for _, form := range forms {
			for _, k := range resolve.Keys(form) {
				if !seen[k] {
					seen[k] = true
					b.Aliases = append(b.Aliases, store.BulkAlias{Key: k, Alias: form, EntityID: p.id})
				}
			}
		}
	}
	return b
}

// benchQueries mixes the questions an agent asks: about a named person
// (graph, keyword), a paraphrase of a hobby or job (semantic), an order
// code (keyword), and a period, in English and Chinese (temporal).
func benchQueries(cfg BankConfig, people []benchPerson, facts []benchFact, rng *rand.Rand) []recall.Request {
	var persons, cn []benchPerson
	for _, p := range people {
		if p.kind == "person" && p.facts > 0 {
			if p.cn {
				cn = append(cn, p)
			} else {
				persons = append(persons, p)
			}
		}
	}
	var codes []string
	for _, f := range facts {
		if f.code != "" {
			codes = append(codes, f.code)
		}
	}
	out := make([]recall.Request, 0, cfg.Queries)
	for len(out) < cfg.Queries {
		var q string
		p := pick(rng, persons)
		switch rng.IntN(10) {
		case 0:
			q = fmt.Sprintf("What does %s do for a living?", p.name)
		case 1:
			q = fmt.Sprintf("Where does %s live now?", p.first)
		case 2:
			q = fmt.Sprintf("Who enjoys %s?", strings.ToUpper(pick(rng, benchHobbies)[:1])+pick(rng, benchHobbies)[1:])
		case 3:
			if len(codes) > 0 {
				q = fmt.Sprintf("What happened with order %s?", pick(rng, codes))
			} else {
				q = "Which orders were shipped?"
			}
		case 4:
			q = "What did I do last Saturday?"
		case 5:
			q = fmt.Sprintf("What did I talk about with %s last week?", p.first)
		case 6:
			q = fmt.Sprintf("Is %s allergic to anything?", p.name)
		case 7:
			if len(cn) > 0 {
				q = fmt.Sprintf("%s在哪里工作？", pick(rng, cn).name)
			} else {
				q = "上周六我做了什么？"
			}
		case 8:
			q = fmt.Sprintf("Who did I see in %s?", pick(rng, benchMonths))
		default:
			q = fmt.Sprintf("Any travel plans for %s to %s?", p.first, pick(rng, benchCities))
		}
		out = append(out, recall.Request{BankID: cfg.BankID, Query: q, QueryTime: cfg.Now})
	}
	return out
}
