package extract

import "testing"

func TestAssistantChitChat(t *testing.T) {
	finder := &entityFinder{known: map[string]string{"Alice": KindPerson}}
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"Anything planned?", true},
		{"Want help breaking it into steps?", true},
		{"Did you make it in on time?", true},
		{"Oh nice, how do you feel about it?", true},
		{"好看吗？", true},
		{"讲的是什么故事？", true},
		// Statements are kept, reactions too: no word list decides what
		// a reaction is.
		{"That's rough.", false},
		{"好的，我记住了。", false},
		// advice and answers are kept: users ask what the assistant said
		{"I'd go with The Remains of the Day.", false},
		{"Try the cobra stretch and hold it for thirty seconds on each side.", false},
		{"Have you tried the cobra stretch?", false},
		{"How about a hostel near the station?", false},
		{"Multiply by nine fifths and add thirty-two.", false},
		{"Go for Barbera; it won't overpower the risotto.", false},
		// names, numbers and long sentences are kept
		{"Good choice, Alice.", false},
		{"Did Greg like it?", false},
		{"That's 20% off.", false},
		{"That restaurant on the corner closed last month because the landlord doubled the rent.", false},
		{"王芳的女儿考上了武汉大学吗？", false},
		{"简短一点，重申请求，再给出明确的下一步。", false},
	} {
		if got := assistantChitChat(tc.s, finder); got != tc.want {
			t.Errorf("assistantChitChat(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

func TestHanNamesAndNicknames(t *testing.T) {
	finder := &entityFinder{known: map[string]string{}}
	for _, tc := range []struct {
		s    string
		want []string
	}{
		{"阿洋最近迷上了攀岩，周末都找不到人。", []string{"阿洋"}},
		{"芳芳把旧车卖了，换了辆比亚迪。", []string{"芳芳"}},
		{"敏姐说摄影特别解压。", []string{"敏姐"}},
		{"静静家里新养了一只仓鼠，天天发朋友圈。", []string{"静静"}},
		// not names
		{"我阿姨天天去公园。", nil},
		{"表姐说她很忙。", nil},
		{"我们慢慢走。", nil},
	} {
		var got []string
		for _, e := range finder.find(tc.s, nil) {
			if e.Kind == KindPerson {
				got = append(got, e.Name)
			}
		}
		if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
			t.Errorf("persons in %q = %v, want %v", tc.s, got, tc.want)
		}
	}
}
