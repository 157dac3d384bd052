package eval

// The words of the dialogue part: two friends catching up over months, in
// their own voices. Written separately from the other parts' templates, so
// it shares none of their phrasings. {n} is the speaker a question is
// about, {v} the value, {p} a third person, {w} a time phrase.

// dlgFact is one kind of thing a speaker says about themselves, with the
// third-person questions that ask for it.
type dlgFact struct {
	// pool entries are "key|text" (or a plain value): the key is the gold
	// answer, the text is what the speaker says.
	pool []string
	say  []string
	ask  []string
	// update are the later statements of a changed state (knowledge
	// update only): say is then the earlier state.
	update []string
	// askKey makes a temporal question name the event by its pool key, a
	// paraphrase, rather than by what the speaker said.
	askKey bool
}

var dlgSpeakerNames = []string{
	"Priya", "Tomás", "Ingrid", "Kwame", "Hana", "Declan", "Marisol", "Oskar",
	"Leilani", "Ravi", "Sunniva", "Bashir", "Elodie", "Jonah", "Amara", "Teodor",
	"Yuki", "Callum", "Noor", "Matteo", "Freya", "Desmond", "Ines", "Kofi",
	"Rosalind", "Emeka", "Signe", "Farid", "Colette", "Anders",
}

// dlgCompanions are the third people in the speakers' lives.
var dlgCompanions = []string{
	"Wren|my cousin Wren", "Abel|my neighbor Abel", "Dalia|my sister Dalia", "Lorenzo|Lorenzo from work",
	"Gwen|my old roommate Gwen", "Silas|my brother Silas", "Odette|my friend Odette", "Ferris|my uncle Ferris",
	"Tamsin|my coworker Tamsin", "Rafferty|my buddy Rafferty", "Josefa|my aunt Josefa", "Idris|my climbing partner Idris",
	"Maren|my college friend Maren", "Cyrus|my stepdad Cyrus", "Lottie|my niece Lottie", "Baptiste|my friend Baptiste",
}

var dlgSingle = []dlgFact{
	{ // a new skill
		pool: []string{"pottery", "cello|the cello", "Portuguese", "woodworking", "salsa|salsa dancing", "watercolor|watercolor painting",
			"sign language", "ukulele|the ukulele", "calligraphy", "sourdough|sourdough baking", "chess", "knitting",
			"improv|improv comedy", "archery", "welding", "beekeeping", "banjo|the banjo", "Japanese"},
		say: []string{
			"I finally signed up for {v} lessons, the first one was a disaster but I loved it.",
			"Guess what, I've started learning {v}. My teacher says I'm a natural, which is a kind lie.",
			"So I picked up {v} a few weeks ago and I'm trying to practice a bit every evening.",
		},
		ask: []string{"What did {n} start learning?", "Which new skill has {n} taken up?", "What is {n} taking lessons in?"},
	},
	{ // a pet
		pool: []string{"corgi|a corgi puppy", "tabby|a tabby kitten", "beagle|a senior beagle", "parrot|a grey parrot", "rabbit|a lop-eared rabbit",
			"greyhound|a retired greyhound", "tortoise|a tortoise", "husky|a husky mix", "ferret|a ferret", "dachshund|a dachshund"},
		say: []string{
			"We adopted {v} from the shelter on Saturday and the kids are obsessed.",
			"I have news: I brought home {v}! I have not slept since.",
			"There's {v} asleep on my feet right now, we got her from a rescue last week.",
		},
		ask: []string{"What pet did {n} adopt?", "What animal did {n} bring home from the shelter?", "What kind of animal recently joined {n}'s household?"},
	},
	{ // hiking with someone
		pool: dlgCompanions,
		say: []string{
			"I went hiking with {v} on Sunday, my legs are still complaining.",
			"{v} dragged me up a mountain trail at six in the morning, it was worth it for the view.",
			"Did a long hike with {v} over the weekend, we got completely lost for an hour.",
		},
		ask: []string{"Who did {n} go hiking with?", "Who went on a hike with {n}?", "Which person took {n} up a mountain trail?"},
	},
	{ // birthday dinner place
		pool: []string{"Casa Lupita", "Blue Heron|the Blue Heron", "Saffron Garden", "Noodle Republic", "Osteria Fiamma", "Copper Kettle|the Copper Kettle",
			"Little Tbilisi", "Marrow & Rye", "Lantern Room|the Lantern Room", "Pho Real", "Bistro Marguerite", "Smoke Shack"},
		say: []string{
			"For my birthday we ended up at {v}, and the staff sang, and I wanted to disappear.",
			"We had my birthday dinner at {v}. I ate my body weight in bread.",
			"My partner booked {v} for my birthday, I didn't even know they took reservations.",
		},
		ask: []string{"Where did {n} have their birthday dinner?", "Which restaurant did {n} go to for their birthday?", "Where did {n} celebrate turning a year older?"},
	},
	{ // a book
		pool: []string{"The Salt Road", "A Map of Quiet Things", "Winter Orchard", "The Glass Cartographer", "Nine Lanterns", "The Tidekeeper",
			"Small Hours in Lisbon", "The Orchard Thief", "Paper Moons", "The Last Ferry Home", "A Field Guide to Leaving", "Ashfall"},
		say: []string{
			"I'm halfway through {v} and I can't put it down.",
			"I stayed up until two reading {v}, the ending of part one wrecked me.",
			"My book club picked {v} this month and for once I actually like the pick.",
		},
		ask: []string{"What book is {n} reading?", "Which novel has {n} been hooked on?", "What did {n} stay up late reading?"},
	},
	{ // a purchase
		pool: []string{"kayak|a secondhand kayak", "espresso machine|an espresso machine", "standing desk|a standing desk", "e-bike|an e-bike",
			"telescope|a telescope", "sewing machine|a sewing machine", "pizza oven|a pizza oven", "record player|a record player",
			"rowing machine|a rowing machine", "drone|a camera drone", "bread maker|a bread maker", "hammock|a backyard hammock"},
		say: []string{
			"I finally bought {v}, I've been eyeing it for a year.",
			"Don't judge me, but I splurged on {v} this weekend.",
			"Treated myself to {v}, my bank account is crying but I'm happy.",
		},
		ask: []string{"What did {n} buy recently?", "What big purchase did {n} make?", "What did {n} splurge on?"},
	},
	{ // hometown
		pool: []string{"Tromsø", "Ballina", "Oaxaca", "Dunedin", "Bozeman", "Kraków", "Hilo", "Aarhus", "Nelson", "Cuenca", "Ljubljana", "Galway"},
		say: []string{
			"I grew up in {v}, where everyone knows everyone's business.",
			"Back in {v}, where I'm from, nobody locks their doors.",
			"My parents still live in {v}, the house I grew up in hasn't changed at all.",
		},
		ask: []string{"Where did {n} grow up?", "What town is {n} originally from?", "Where is {n}'s hometown?"},
	},
	{ // who gave them something
		pool: dlgCompanions,
		say: []string{
			"{v} knitted me a scarf for no reason at all, I nearly cried.",
			"I got a surprise care package from {v}, full of snacks and a sweet note.",
			"{v} showed up with soup when I was sick, what a legend.",
		},
		ask: []string{"Who surprised {n} with a gift?", "Who sent {n} a care package or a present?", "Which person looked after {n} with a kind gesture?"},
	},
}

// dlgEvents are one-off events of the temporal questions.
var dlgEvents = []dlgFact{
	{
		pool: []string{"half marathon", "10K race|10K", "triathlon sprint|sprint triathlon", "charity fun run|fun run"},
		say:  []string{"I ran my first {v} {w}! Slow, but I finished.", "{w} I did the {v}, and I'm walking like a penguin now."},
		ask:  []string{"When did {n} run the {v}?", "When did {n} take part in a race?"},
	},
	{
		pool: []string{"driving test", "citizenship interview", "thesis defense", "job interview"},
		say:  []string{"I had my {v} {w} and I passed!", "So the {v} was {w}, I was shaking the whole time but it went fine."},
		ask:  []string{"When did {n} have the {v}?", "When did {n} get through that nerve-racking appointment?"},
	},
	{
		pool: []string{"Glass Animals", "the Cure|The Cure", "tribute band|a Fleetwood Mac tribute band", "Bonobo", "Khruangbin", "Hozier"},
		say:  []string{"Saw {v} live {w}, best night of the year so far.", "{w} we went to see {v} and I lost my voice from singing."},
		ask:  []string{"When did {n} see {v} live?", "When did {n} go to that concert?"},
	},
	{
		pool: []string{"wisdom tooth|wisdom tooth removed", "knee surgery", "eye surgery|laser eye surgery", "hand|hand stitched up"},
		say:  []string{"I got my {v} {w}, so I'm on the couch with ice cream.", "Had my {v} {w}, the doctor says I'm healing fast."},
		ask:  []string{"When did {n} have the {v}?", "When did {n} have that medical procedure?"},
	},
}

// dlgMulti are things that build up across sessions.
var dlgMulti = []dlgFact{
	{
		pool: []string{"Lisbon", "Kyoto", "Marrakech", "Reykjavík", "Cape Town", "Hanoi", "Buenos Aires", "Tallinn", "Montréal",
			"Istanbul", "Valparaíso", "Edinburgh", "Tbilisi", "Porto", "Seoul", "Zanzibar"},
		say: []string{
			"Just got back from {v}, the food alone was worth the flight.",
			"We spent the long weekend in {v}, I took about five hundred photos.",
			"Work sent me to {v} for a few days and I snuck in some sightseeing.",
			"I'm writing this from a café in {v}, wish you were here!",
		},
		ask: []string{"Which places has {n} visited?", "What cities did {n} travel to?", "Where has {n} been on trips?"},
	},
	{
		pool: []string{"shakshuka", "pad thai", "rendang|beef rendang", "risotto|mushroom risotto", "pierogi", "tagine|lamb tagine",
			"katsu|chicken katsu", "paella", "gumbo", "dumplings", "moussaka", "laksa"},
		say: []string{
			"Last night I made {v} from scratch, and it actually turned out edible.",
			"I've been on a cooking kick, tonight it was {v}.",
			"Tried a recipe for {v} and the whole kitchen still smells amazing.",
		},
		ask: []string{"What dishes has {n} cooked?", "What has {n} made in the kitchen lately?", "Which recipes has {n} tried?"},
	},
	{
		pool: []string{"bouldering", "paddleboarding", "fencing", "curling", "ice skating", "pickleball", "surfing", "roller derby", "badminton", "kickboxing"},
		say: []string{
			"I tried {v} for the first time, I'm so sore.",
			"A friend talked me into trying {v} and honestly it was fun.",
			"Had my first go at {v} with some people from the gym, I fell over constantly.",
		},
		ask: []string{"Which sports has {n} tried?", "What activities has {n} given a go?", "What new sports did {n} try out?"},
	},
}

// dlgUpdates are states that change: say is the old one, update the new.
var dlgUpdates = []dlgFact{
	{
		pool: []string{"Leeds", "Denver", "Rotterdam", "Adelaide", "Halifax", "Bologna", "Wellington", "Göteborg", "Austin", "Lyon", "Osaka", "Vancouver"},
		say: []string{
			"Life in {v} is pretty quiet, which suits me fine.",
			"The weather in {v} has been miserable all week.",
		},
		update: []string{
			"Big news, we finally moved to {v}! New apartment, tiny kitchen.",
			"We're all unpacked in {v} now, the move nearly killed me.",
		},
		ask: []string{"Where does {n} live now?", "What city is {n} living in these days?"},
	},
	{
		pool: []string{"Brightwell Labs", "Harbor & Finch", "Lumen Logistics", "Northgate Bank", "Pinecrest Hospital", "Tidewater Studios",
			"Quarry Road Press", "Halcyon Games", "Marlowe Insurance", "Greenleaf Grocers", "Vantage Robotics", "Riverbend School"},
		say: []string{
			"Work at {v} has been nonstop this month.",
			"My manager at {v} wants me to lead the next project.",
		},
		update: []string{
			"I handed in my notice! I start at {v} on Monday.",
			"First week at {v} done, everyone there is so friendly.",
		},
		ask: []string{"Where does {n} work now?", "Who is {n}'s current employer?"},
	},
	{
		pool: []string{"Honda Civic", "Subaru Outback", "Volvo wagon", "Mini Cooper", "Toyota Prius", "Ford pickup", "Kia Niro", "Mazda 3"},
		say: []string{
			"My {v} made a horrible noise again this morning.",
			"I drove the {v} out to the coast, it barely made it.",
		},
		update: []string{
			"I finally got rid of the old car, I'm driving a {v} now.",
			"Picked up my new {v} yesterday, it still has that new-car smell.",
		},
		ask: []string{"What car does {n} drive now?", "What is {n}'s current car?"},
	},
}

// dlgAbsent are asked about and never said; none of them may occur in any
// turn of the part.
var dlgAbsent = []dlgFact{
	{
		pool: []string{"sailboat", "motorcycle", "vineyard", "greenhouse", "saxophone", "tattoo", "jet ski", "treehouse", "food truck", "harpsichord"},
		ask: []string{"What did {n} name the {v}?", "When did {n} sell the {v}?", "Who helped {n} with the {v}?",
			"How much did {n} pay for the {v}?"},
	},
}

// dlgReactions answer a friend's news.
var dlgReactions = []string{
	"No way, that's huge!", "Ha, I love that for you.", "Wait, really? You have to tell me everything next time.",
	"That sounds exhausting, but fun.", "Okay, I'm jealous.", "Good for you, honestly.", "Send pictures!",
	"Oh wow. How are you feeling about it?", "That is so you.", "Ha! Of course you did.", "Amazing, I'm proud of you.",
	"Oof, brave.", "I need the full story over coffee.", "Honestly iconic.",
}

// dlgPrompts are what a friend asks before the news comes out.
var dlgPrompts = []string{
	"So what's new with you?", "Anything exciting happen since we last talked?", "How have things been on your end?",
	"Tell me something good, I need it.", "What have you been up to lately?",
}

// dlgOpen and dlgClose start and end a session; {o} is the other speaker.
var dlgOpen = [][2]string{
	{"Hey {o}! It's been ages.", "I know, I'm sorry, it's been a chaotic few weeks."},
	{"Morning {o}, got a minute?", "Always for you. What's up?"},
	{"{o}! Are you free to chat?", "Yes, finally a quiet evening here."},
	{"Hi {o}, how's your week going?", "Long. But better now."},
}

var dlgClose = [][2]string{
	{"Okay, I have to run. Talk soon!", "Bye! Say hi to everyone for me."},
	{"I should get some sleep. This was nice.", "It was. Night!"},
	{"Let's not leave it so long next time.", "Deal. Same time next week?"},
	{"Dinner's burning, gotta go!", "Go go go! Talk later."},
}

// dlgFiller is small talk: each entry is an exchange started by either
// speaker. {food}, {day}, {show}, {weather} are filled from dlgSlots.
var dlgFiller = [][]string{
	{"Did you end up watching {show}?", "Two episodes in. It's slow but I think it's going somewhere.", "Stick with it, episode four is the good one."},
	{"The weather here is {weather} again.", "Same here, I've given up on planning anything outside."},
	{"I had {food} for lunch and now I want a nap.", "Honestly that sounds like the perfect afternoon."},
	{"Work has been a lot this week.", "Is it the same deadline as before?", "Yep, it keeps moving. Classic."},
	{"My phone screen cracked on {day}.", "Noooo. Did you get it fixed?", "Not yet, I'm living with the spiderweb for now."},
	{"Have you been sleeping any better?", "A bit. I stopped looking at screens before bed, mostly."},
	{"I keep meaning to call my mom more.", "Same. We should both do it this weekend."},
	{"Random question: pineapple on pizza?", "Absolutely yes, fight me.", "I knew we were friends for a reason."},
	{"I tried meditating for ten minutes on {day}.", "How did it go?", "I thought about {food} the whole time."},
	{"Traffic this morning was unreal.", "It's the roadworks, they've been at it for months."},
	{"Any plans for {day}?", "Nothing at all, and I intend to keep it that way."},
	{"I finally cleaned out the fridge.", "Brave. What did you find?", "Things I won't describe."},
	{"Are you still doing that step challenge?", "On and off. Mostly off, if I'm honest."},
	{"I've had this song stuck in my head for three days.", "Which one?", "I don't even know the name, that's the worst part."},
	{"The neighbors had a party until three on {day}.", "Did you go over and complain?", "No, I just lay there being old."},
	{"I tried baking bread and burned it a little.", "A little burnt is just extra flavor."},
}

var dlgSlots = map[string][]string{
	"food":    {"leftover curry", "a huge burrito", "instant noodles", "a sad desk salad", "cheese toast", "cold pizza", "a bowl of ramen"},
	"day":     {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"},
	"show":    {"that detective series", "the cooking competition", "the new sci-fi show", "the documentary you recommended"},
	"weather": {"grey and drizzly", "weirdly hot", "windy enough to knock you over", "freezing"},
}
