package resolve

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mozillazg/go-pinyin"
	"golang.org/x/text/unicode/norm"
)

// Normalize returns the form of a name used for exact comparison and as the
// alias table key: NFKC (so full-width "ＡＬＩＣＥ" becomes "ALICE"), Latin
// accents dropped ("José" = "Jose", "Zhāng" = "Zhang"), lower case,
// punctuation removed, honorifics removed ("Mr. Zhang" -> "zhang",
// "张伟先生" -> "张伟", "张总" -> "张"), single spaces, and no spaces
// between Han characters ("张 伟" -> "张伟").
//
// Familiar prefixes 老 and 小 are kept: "老张" is a different string from
// "张", and [Keys] and the resolver know what it means.
func Normalize(name string) string {
	n, _ := normalize(name)
	return n
}

// normalize is Normalize that also reports whether an honorific was removed,
// because "Mr. Zhang" and "张总" name a person by surname only.
func normalize(name string) (string, bool) {
	s := norm.NFKC.String(name)
	s = stripLatinMarks(s)

	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\'' || r == '\u2019' || r == '`':
			// O'Brien -> obrien: apostrophes are spelt both ways.
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteByte(' ')
		}
	}
	toks := strings.Fields(b.String())
	honorific := false
	if len(toks) > 1 {
		kept := toks[:0]
		for _, t := range toks {
			if latinHonorifics[t] {
				honorific = true
				continue
			}
			kept = append(kept, t)
		}
		toks = kept
	}
	// Han strings lose their spaces; Latin tokens keep one.
	var out []rune
	for i, t := range toks {
		if i > 0 && !(isHan(lastRune(toks[i-1])) && isHan(firstRune(t))) {
			out = append(out, ' ')
		}
		out = append(out, []rune(t)...)
	}
	if rest, ok := stripHanTitle(out); ok {
		out, honorific = rest, true
	}
	return string(out), honorific
}

// latinHonorifics are titles dropped from Latin names. They say nothing
// about identity, and their presence with a single remaining word marks a
// surname ("Mr. Zhang").
var latinHonorifics = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "miss": true, "mx": true, "mister": true,
	"dr": true, "prof": true, "professor": true, "sir": true, "madam": true,
	"madame": true, "mme": true, "mlle": true, "herr": true, "frau": true,
}

// hanTitles are titles written after a Chinese name. Two-character titles
// are stripped after any name; one-character ones (总, 哥, 姐) only after a
// bare surname, because they also occur inside given names.
var hanTitles = []string{
	"先生", "女士", "小姐", "太太", "老师", "教授", "博士", "医生", "大夫",
	"经理", "总监", "主任", "师傅", "同学", "阿姨", "叔叔", "总", "哥", "姐",
}

func stripHanTitle(rs []rune) ([]rune, bool) {
	if len(rs) < 2 || !allHan(rs) {
		return rs, false
	}
	for _, t := range hanTitles {
		tr := []rune(t)
		if len(rs) <= len(tr) || string(rs[len(rs)-len(tr):]) != t {
			continue
		}
		rest := rs[:len(rs)-len(tr)]
		if len(tr) == 1 && !isSurname(string(rest)) {
			continue
		}
		return rest, true
	}
	return rs, false
}

// stripLatinMarks drops combining marks that follow Latin letters (tone
// marks in pinyin, accents in European names) but keeps marks on other
// scripts, where they change the letter (Japanese dakuten, Devanagari).
func stripLatinMarks(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	d := norm.NFD.String(s)
	var b strings.Builder
	b.Grow(len(d))
	var prev rune
	for _, r := range d {
		if unicode.Is(unicode.Mn, r) && prev != 0 && unicode.Is(unicode.Latin, prev) {
			continue
		}
		b.WriteRune(r)
		if !unicode.Is(unicode.Mn, r) {
			prev = r
		}
	}
	return norm.NFC.String(b.String())
}

func isHan(r rune) bool { return unicode.Is(unicode.Han, r) }

func allHan(rs []rune) bool {
	for _, r := range rs {
		if !isHan(r) {
			return false
		}
	}
	return len(rs) > 0
}

func firstRune(s string) rune { r, _ := utf8.DecodeRuneInString(s); return r }
func lastRune(s string) rune  { r, _ := utf8.DecodeLastRuneInString(s); return r }

// parsed is a name taken apart for comparison.
type parsed struct {
	norm        string
	han         bool     // written entirely in Han characters
	tokens      []string // Latin-side tokens (Han tokens as pinyin)
	surnames    []string // possible surnames, as pinyin or Latin tokens
	hanSurname  string   // the Han surname when han
	given       string   // first name of a Latin name, Han given name
	surnameOnly bool     // 老张, 小张, 张先生, Mr. Zhang
	full        []string // space-free full-name forms in each plausible order
	canon       string   // norm with a nickname first token replaced ("bob smith" -> "robert smith")
}

// short reports a name that refers to a person only in part: by surname
// (老张, Mr. Zhang) or by a single Latin word (Alice).
func (p parsed) short() bool {
	return p.surnameOnly || !p.han && len(p.tokens) == 1
}

func parse(raw string) parsed {
	n, honorific := normalize(raw)
	p := parsed{norm: n, canon: n}
	if n == "" {
		return p
	}
	rs := []rune(n)
	if allHan(rs) {
		p.han = true
		parseHan(&p, rs, honorific)
		return p
	}
	toks := strings.Fields(n)
	for i, t := range toks {
		if allHan([]rune(t)) {
			toks[i] = strings.Join(toPinyin(t), "")
		}
	}
	p.tokens = toks
	switch {
	case honorific && len(toks) == 1:
		p.surnameOnly = true
		p.surnames = []string{toks[0]}
	case len(toks) == 1:
		p.given = toks[0]
	default:
		p.given = toks[0]
		// Western order puts the surname last; Chinese names written in
		// Latin letters often keep it first ("Zhang Wei").
		p.surnames = []string{toks[len(toks)-1]}
		if pinyinSurnames[toks[0]] {
			p.surnames = append(p.surnames, toks[0])
		}
	}
	p.full = orders(toks)
	if c, ok := nicknames[toks[0]]; ok {
		p.canon = strings.Join(append([]string{c}, toks[1:]...), " ")
	}
	return p
}

func parseHan(p *parsed, rs []rune, honorific bool) {
	s := string(rs)
	if honorific || len(rs) == 1 {
		if isSurname(s) {
			p.surnameOnly = true
			p.hanSurname = s
			p.surnames = []string{surnamePinyin(s)}
			return
		}
	}
	// 老张 and 小张: "old/young Zhang", a familiar way to name someone by
	// surname. 小明 is not a surname form, hence the exclusions.
	if len(rs) >= 2 && (rs[0] == '老' || rs[0] == '小') {
		sur := string(rs[1:])
		if isSurname(sur) && !(rs[0] == '小' && notFamiliarSurname[sur]) {
			p.surnameOnly = true
			p.hanSurname = sur
			p.surnames = []string{surnamePinyin(sur)}
			p.full = []string{strings.Join(toPinyin(s), "")}
			return
		}
	}
	sur, given := splitHanName(rs)
	if sur == "" {
		p.full = []string{strings.Join(toPinyin(s), "")}
		return
	}
	sp := surnamePinyin(sur)
	gp := strings.Join(toPinyin(given), "")
	p.hanSurname = sur
	p.given = given
	p.surnames = []string{sp}
	p.full = []string{sp + gp, gp + sp}
}

// splitHanName splits a 2-4 character Han name into surname and given name
// when it starts with a known surname.
func splitHanName(rs []rune) (sur, given string) {
	if len(rs) < 2 || len(rs) > 4 {
		return "", ""
	}
	if len(rs) >= 3 && compoundSurnames[string(rs[:2])] != "" {
		return string(rs[:2]), string(rs[2:])
	}
	if _, ok := surnames[rs[0]]; ok {
		return string(rs[:1]), string(rs[1:])
	}
	return "", ""
}

// orders returns the tokens joined without spaces in the orders a name may
// be written in: as given, with the last token first, and with the first
// token last. "wei zhang" and "zhang wei" share a form.
func orders(toks []string) []string {
	joined := strings.Join(toks, "")
	if len(toks) < 2 {
		return []string{joined}
	}
	n := len(toks)
	lastFirst := toks[n-1] + strings.Join(toks[:n-1], "")
	firstLast := strings.Join(toks[1:], "") + toks[0]
	out := []string{joined, lastFirst}
	if firstLast != lastFirst {
		out = append(out, firstLast)
	}
	return out
}

var pinyinArgs = pinyin.NewArgs()

// toPinyin transliterates Han characters to toneless pinyin syllables, with
// ü written u (吕 -> lu), as it usually is in Latin-script names.
func toPinyin(s string) []string {
	py := pinyin.LazyPinyin(s, pinyinArgs)
	for i, p := range py {
		py[i] = strings.ReplaceAll(p, "v", "u")
	}
	return py
}

// surnamePinyin transliterates a surname with its surname reading, which for
// some characters differs from the common one (曾 zeng not ceng, 单 shan not
// dan).
func surnamePinyin(s string) string {
	if p := compoundSurnames[s]; p != "" {
		return p
	}
	rs := []rune(s)
	if len(rs) == 1 {
		if p := surnames[rs[0]]; p != "" {
			return p
		}
	}
	return strings.Join(toPinyin(s), "")
}

func isSurname(s string) bool {
	if compoundSurnames[s] != "" {
		return true
	}
	rs := []rune(s)
	if len(rs) != 1 {
		return false
	}
	_, ok := surnames[rs[0]]
	return ok
}

// Keys returns the lookup keys of a name, for the alias table and the
// database prefilter. Two names that may refer to one entity share a key:
//
//   - the normalized form ("张伟", "zhang wei");
//   - space-free full-name forms in both orders, Han names transliterated
//     ("zhangwei", "weizhang"), so 张伟, Zhang Wei and Wei Zhang meet;
//   - the nickname-expanded form ("robert smith" for "Bob Smith");
//   - "surname:" plus the pinyin or Latin surname, which a full name has and
//     a surname-only form (老张, 小张, 张总, Mr. Zhang) refers to;
//   - "given:" plus the first name of a Latin name, which "Alice Chen" has
//     and a lone "Alice" refers to.
//
// Keys only find candidates; [Resolver.Resolve] decides, because a shared
// surname key is not enough on its own.
func Keys(name string) []string {
	p := parse(name)
	if p.norm == "" {
		return nil
	}
	keys := []string{p.norm}
	add := func(k string) {
		for _, x := range keys {
			if x == k {
				return
			}
		}
		keys = append(keys, k)
	}
	for _, f := range p.full {
		add(f)
	}
	if p.canon != p.norm {
		add(p.canon)
	}
	for _, s := range p.surnames {
		add("surname:" + s)
	}
	switch {
	case !p.han && len(p.tokens) >= 2:
		add("given:" + p.given)
		if c, ok := nicknames[p.given]; ok {
			add("given:" + c)
		}
	case !p.han && len(p.tokens) == 1 && !p.surnameOnly:
		add("given:" + p.given)
		if c, ok := nicknames[p.given]; ok {
			add("given:" + c)
		}
		// A lone Latin word may be a surname too ("Zhang").
		add("surname:" + p.given)
	}
	return keys
}
