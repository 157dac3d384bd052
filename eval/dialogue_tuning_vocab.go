package eval

import "time"

// The words of the dialogue-tuning part: two friends or colleagues texting
// over a season, with the dialogue part's mechanics but none of its words.
// It was written without reading the dialogue part's vocabulary, so that
// recall work fitted to this part's misses shows up as a gap on that one.
// {n} is the speaker a question is about, {v} the value, {w} a time
// phrase, {o} the other speaker; filler slots are in dlgtSlots.

// dialogueTuningStart is when the part's sessions begin: late enough that
// `--part all` keeps the manifest start of the other parts.
var dialogueTuningStart = time.Date(2024, time.August, 12, 0, 0, 0, 0, time.UTC)

// dialogueTuningStream sets a bit of the PCG stream that no other part's
// stream has (the dialogue part's is bit 48).
const dialogueTuningStream = uint64(1) << 49

var dialogueTuningVocabulary = dialogueVocab{
	part: PartDialogueTuning, bankPrefix: "dlgt", stream: dialogueTuningStream, start: dialogueTuningStart,
	speakers: dlgtSpeakers, companions: dlgtCompanions,
	single: dlgtSingle, events: dlgtEvents, multi: dlgtMulti, updates: dlgtUpdates, absent: dlgtAbsent,
	reactions: dlgtReactions, prompts: dlgtPrompts, open: dlgtOpen, close: dlgtClose,
	filler: dlgtFiller, slots: dlgtSlots,
	relay: "Funny, {p} messaged me this earlier: \"{q}\"",
	when: []dlgWhen{
		{"last night", func(t time.Time) time.Time { return dayOf(t).AddDate(0, 0, -1) }},
		{"the day before yesterday", func(t time.Time) time.Time { return dayOf(t).AddDate(0, 0, -2) }},
		{"earlier today", dayOf},
		{"three days ago", func(t time.Time) time.Time { return dayOf(t).AddDate(0, 0, -3) }},
		{"last Tuesday", func(t time.Time) time.Time { return weekdayBefore(t, time.Tuesday) }},
	},
}

// dlgtSpeakers are the two people of a bank; no name is part of another.
var dlgtSpeakers = []string{
	"Tobias", "Eulalia", "Rafael", "Ximena", "Bartholomew", "Yusuf", "Henrike", "Bongani",
	"Solveig", "Radomir", "Catalina", "Ramesh", "Ottilie", "Oluwaseun", "Ludmila", "Fergus",
}

// dlgtCompanions are third people whose messages a speaker passes on.
var dlgtCompanions = []string{
	"Gunnar|my brother-in-law Gunnar", "Delphine|my flatmate Delphine", "Okafor|Mr Okafor next door",
	"Bettina|my manager Bettina", "Ruairi|my old coach Ruairi", "Hiroko|my aunt Hiroko",
	"Lenka|Lenka from the lab", "Cosmin|Cosmin from climbing",
}

// dlgtSingle are facts a speaker states once.
var dlgtSingle = []dlgFact{
	{
		pool: []string{"axolotl|axolotl", "chinchilla|chinchilla", "hedgehog|pygmy hedgehog", "gecko|leopard gecko",
			"iguana|rescued iguana", "budgie|pair of budgies", "tarantula|tarantula called Boris", "cockatiel|cockatiel"},
		say: []string{"we finally adopted a {v} from the rescue centre", "the rescue matched us with a {v} and I'm completely smitten"},
		ask: []string{"What kind of animal did {n} adopt?", "Which pet did {n} bring home?"},
	},
	{
		pool: []string{"bagpipes", "theremin", "accordion", "trumpet", "bassoon", "marimba", "tabla", "mandolin"},
		say:  []string{"I signed up for {v} lessons at the community centre", "started learning the {v}, my neighbours must hate me"},
		ask:  []string{"What instrument is {n} learning to play?", "Which instrument has {n} taken up?"},
	},
	{
		pool: []string{"Azores|the Azores", "Kyrgyzstan", "Hokkaido", "Patagonia", "Sardinia", "Montevideo", "Tasmania", "Svalbard"},
		say:  []string{"we booked two weeks in {v} for the spring", "flights to {v} are booked, I can't stop grinning"},
		ask:  []string{"Where is {n} going on holiday?", "What trip has {n} booked?"},
	},
	{
		pool: []string{"shellfish", "peanuts", "kiwi", "sesame", "celery", "mustard", "lupin", "buckwheat"},
		say:  []string{"the allergy clinic rang, turns out I react to {v}", "so the tests came back and it's {v}, that explains the rashes"},
		ask:  []string{"What did {n} find out they are allergic to?", "What food does {n} have to avoid now?"},
	},
	{
		pool: []string{"canoe|cedar-strip canoe", "workbench|oak workbench", "bookcase|walnut bookcase", "go-kart|go-kart for my nephew",
			"birdhouse|birdhouse with a green roof", "dollhouse|dollhouse for my niece", "coffee table|coffee table out of old pallets", "ship in a bottle|ship in a bottle"},
		say: []string{"I'm building a {v} in the garage at weekends", "my evenings have disappeared into a {v} I'm making"},
		ask: []string{"What is {n} making in their spare time?", "What's {n}'s weekend project?"},
	},
	{
		pool: []string{"slow cooker", "paddleboard", "film camera", "label maker", "pasta maker", "e-reader", "waffle iron", "smartwatch"},
		say:  []string{"my sister got me a {v} for my birthday", "opened my presents, the big one was a {v}!"},
		ask:  []string{"What did {n} get for their birthday?", "What present did {n} receive from family?"},
	},
	{
		pool: []string{"food bank", "hospice", "library", "soup kitchen", "museum", "botanical garden", "refugee centre", "youth club"},
		say:  []string{"I've started volunteering at the {v} on Thursdays", "I help out at the {v} a couple of evenings a week now"},
		ask:  []string{"Where does {n} volunteer?", "Where does {n} give their time for free?"},
	},
	{
		pool: []string{"dodgeball", "volleyball", "cricket", "netball", "ultimate frisbee", "korfball", "tug of war", "water polo"},
		say:  []string{"I got talked into joining the office {v} team", "there's a {v} league at work and I've joined, god help me"},
		ask:  []string{"What sport did {n} take up with colleagues?", "Which team sport does {n} play through work?"},
	},
}

// dlgtEvents are one-off events. A question names the event by its key,
// a past-tense paraphrase of what was said, as a person retelling it would.
var dlgtEvents = []dlgFact{
	{
		pool: []string{"broke a tooth|chipped a molar on a cherry stone", "got a nasty insect bite|got stung by a wasp",
			"was stuck outside their home|got locked out of the flat", "got injured playing a sport|cracked a rib at hockey",
			"had a fall at home|fell off a stepladder", "was sick after a takeaway|got food poisoning from a kebab",
			"hurt a leg skating|twisted an ankle at the ice rink"},
		say:    []string{"ugh, I {v} {w}", "so I {v} {w}, don't laugh"},
		ask:    []string{"When was it that {n} {v}?", "On which day had {n} {v}?"},
		askKey: true,
	},
	{
		pool: []string{"became a citizen|passed the citizenship test", "completed a long-distance race|ran a half marathon",
			"rented a new place|signed the lease on a studio", "came first at a trivia night|won the pub quiz",
			"finished the doctorate|defended the thesis", "moved up at work|got promoted to team lead",
			"completed a sewing project|finished the first quilt"},
		say:    []string{"guess what, I {v} {w}!", "{w} I finally {v}"},
		ask:    []string{"What day did {n} say they {v}?", "Which date was it when {n} {v}?"},
		askKey: true,
	},
	{
		pool: []string{"danced with headphones on|went to a silent disco", "watched the aurora|saw the northern lights",
			"got an author's autograph|met a childhood hero at a book signing", "threw a themed dinner party|hosted a murder mystery dinner",
			"had their fortune told|had a palm reading at the fair", "performed a song in front of colleagues|sang karaoke in front of the whole department",
			"tried a lumberjack sport|tried axe throwing"},
		say:    []string{"{w} I {v}, still buzzing", "not to brag but I {v} {w}"},
		ask:    []string{"On what date did {n} say they {v}?", "When did {n} say they {v}?"},
		askKey: true,
	},
}

// dlgtMulti build up across sessions; the question wants every part.
var dlgtMulti = []dlgFact{
	{
		pool: []string{"The Lighthouse Ledger", "Seven Kinds of Rain", "A Map of Small Hours", "The Glass Ferry", "The Cartographer's Cat", "Copper Sky",
			"The Last Tram", "Quiet Harbour", "The Paper Moth", "Under Juniper", "Blue Signal", "The Orchid Thief's Daughter"},
		say: []string{"just finished {v}, couldn't put it down", "I got through {v} on the train this week"},
		ask: []string{"Which books has {n} finished recently?", "What has {n} been reading lately?"},
	},
	{
		pool: []string{"Casa Lupe", "Mister Pho", "The Copper Pot", "Saffron House", "Noodle Barn", "Bistro Lune",
			"Tandoor Lane", "Golden Wok", "Olive and Fig", "Mama Rosa's", "Kimchi Garage", "Harbour Chippy"},
		say: []string{"finally went to {v}, worth the queue", "had dinner at {v} with the team, really good"},
		ask: []string{"Which restaurants has {n} tried?", "Where has {n} been eating out?"},
	},
	{
		pool: []string{"tomatoes", "basil", "lavender", "chillies", "mint", "sunflowers", "rosemary", "peas",
			"marigolds", "courgettes", "radishes", "runner beans"},
		say: []string{"I planted {v} on the balcony", "added some {v} to the window boxes today"},
		ask: []string{"What has {n} planted this year?", "What is growing in {n}'s window boxes and balcony?"},
	},
}

// dlgtUpdates are states that change: say is the old one, update the new.
// No value is part of another, so the old one is never in the new turn.
var dlgtUpdates = []dlgFact{
	{
		pool:   []string{"paramedic", "florist", "translator", "sound engineer", "dental hygienist", "bookkeeper", "locksmith", "physiotherapist"},
		say:    []string{"I'm working as a {v} at the moment", "being a {v} is fine, pays the rent"},
		update: []string{"I switched careers, I'm a {v} now", "big news: I've retrained and started as a {v}"},
		ask:    []string{"What does {n} do for a living now?", "What is {n}'s current job?"},
	},
	{
		pool:   []string{"vegetarian", "vegan", "pescatarian", "keto", "gluten-free", "paleo"},
		say:    []string{"I've been eating {v} since January", "I'm trying {v}, day forty or so"},
		update: []string{"I dropped the old plan, I eat {v} now", "new regime: I've gone {v}"},
		ask:    []string{"What diet is {n} following now?", "How is {n} eating these days?"},
	},
	{
		pool:   []string{"Welsh", "Korean", "Swahili", "Dutch", "Turkish", "Icelandic", "Greek", "Hindi"},
		say:    []string{"I'm learning {v} on an app, one lesson a day", "my {v} is coming along slowly"},
		update: []string{"I gave up on the old one and switched to {v}", "I've started {v} evening classes instead"},
		ask:    []string{"Which language is {n} learning at the moment?", "What language is {n} studying now?"},
	},
}

// dlgtAbsent are asked about and never said; no turn of the part holds
// any of them.
var dlgtAbsent = []dlgFact{{
	pool: []string{"bonsai", "falconry", "a houseboat", "taxidermy", "a timeshare", "paragliding",
		"an allotment", "ballroom dancing", "a metal detector", "stand-up comedy"},
	ask: []string{"What has {n} said about {v}?", "How does {n} feel about {v}?"},
}}

// dlgtReactions answer a friend's news.
var dlgtReactions = []string{
	"Oh nice, good for you!", "Wait, seriously? Tell me more.", "Ha, did not see that coming.", "That's brilliant.",
	"Oof. Okay.", "Love that for you.", "Huh, fair enough.", "Nice one!",
}

// dlgtPrompts are what a friend asks before the news comes out.
var dlgtPrompts = []string{
	"Anyway, what's going on with you?", "How's life on your end?", "Any news?",
	"You were going to tell me something?", "So? Spill.", "What have you been up to?",
}

// dlgtOpen and dlgtClose start and end a session; {o} is the other speaker.
var dlgtOpen = [][2]string{
	{"Morning {o}! Got a minute?", "Always, go on."},
	{"{o}! Long time.", "I know, sorry, it's been mad."},
	{"Hiya {o}, free to chat?", "Yep, just put the kettle on."},
	{"Evening {o}.", "Hey you. How was your day?"},
}

var dlgtClose = [][2]string{
	{"Right, I should get going.", "Same, speak soon!"},
	{"Gotta run, the oven's beeping.", "Go go, talk later."},
	{"Night then, sleep well.", "You too x"},
	{"Catch you at the weekend?", "Deal."},
}

// dlgtFiller is small talk: each entry is an exchange started by either
// speaker. {snack}, {chore}, {podcast}, {team} and {ride} come from
// dlgtSlots.
var dlgtFiller = [][]string{
	{"Did you see the match? {team} were awful.", "Don't. I turned it off at half time."},
	{"I'm eating {snack} for lunch again, send help.", "Ha, very balanced.", "It has crumbs, crumbs are a food group."},
	{"My landlord still hasn't fixed the boiler.", "Chase him again, honestly.", "I will, after I've finished {chore}."},
	{"Have you listened to {podcast}?", "Only the first episode. Any good?", "It gets better around episode four."},
	{"The {ride} was twenty minutes late this morning.", "Classic. Did you get in on time?", "Just about."},
	{"It's absolutely bucketing down here.", "Same, my shoes are soaked through."},
	{"What are you doing this weekend?", "Nothing, gloriously nothing.", "Jealous."},
	{"I spent the whole evening {chore}.", "Living the dream.", "Rock and roll, that's me."},
	{"Do you know a decent plumber?", "Not really, try the neighbourhood group?"},
	{"Three coffees and it's not even ten.", "Slow down, you'll start vibrating."},
	{"My phone screen cracked again.", "Case. Buy a case.", "Yes, Mum."},
	{"Work's been manic this week.", "Hang in there, nearly there."},
	{"Watching anything good?", "Rewatching old sitcoms mostly.", "Comfort telly, respect."},
	{"I tried {snack} from the new bakery.", "And?", "Dangerous. It's on my way home."},
}

var dlgtSlots = map[string][]string{
	"snack":   {"cheese toasties", "beans on toast", "a cinnamon bun", "crisps", "a limp sandwich"},
	"chore":   {"ironing shirts", "descaling the kettle", "sorting the recycling", "hoovering the stairs"},
	"podcast": {"that true-crime one", "the history show you sent me", "the football pod"},
	"team":    {"United", "the Rovers", "City"},
	"ride":    {"number 12 bus", "tram", "train"},
}
