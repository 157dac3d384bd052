package defense

import (
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/memstream/memstream/internal/bench/samples"
)

func newTestScanner(t testing.TB, cfg ScannerConfig) *Scanner {
	t.Helper()
	s, err := NewScanner(cfg)
	if err != nil {
		t.Fatalf("NewScanner: %v", err)
	}
	return s
}

func TestPatternLibraryShape(t *testing.T) {
	t.Parallel()
	ps := Patterns()
	if len(ps) < 45 {
		t.Fatalf("pattern count = %d, want >= 45", len(ps))
	}
	seen := map[string]bool{}
	for _, p := range ps {
		if seen[p.Label] {
			t.Errorf("duplicate label %q", p.Label)
		}
		seen[p.Label] = true
		if p.Category == "" {
			t.Errorf("%s: empty category", p.Label)
		}
		if p.kind == kindRegex && len(p.Keywords) == 0 {
			t.Errorf("%s: regex pattern without keywords would never run", p.Label)
		}
		// Unanchored windows are searched from every offset: keep them
		// small, or dense text falls off a performance cliff.
		if p.kind == kindRegex && p.before > 0 && p.before+p.maxLen > 512 {
			t.Errorf("%s: unanchored window of %d bytes", p.Label, p.before+p.maxLen)
		}
	}
	// Specific prefixes must come before the generic ones they overlap.
	idx := map[string]int{}
	for i, p := range ps {
		idx[p.Label] = i
	}
	for _, pair := range [][2]string{
		{"anthropic_api_key", "openai_api_key"},
		{"openai_project_key", "openai_api_key"},
		{"openai_admin_key", "openai_api_key"},
		{"gcp_service_account_key", "private_key_block"},
		{"private_key_block", "private_key_block_truncated"},
		{"github_pat", "secret_assignment"},
		{"postgres_url_password", "url_basic_auth_password"},
	} {
		if idx[pair[0]] >= idx[pair[1]] {
			t.Errorf("%s must be ordered before %s", pair[0], pair[1])
		}
	}
}

// contexts wrap a sample the ways chat logs do: prose, CJK with no spaces,
// line breaks, JSON, markdown and code fences.
var contexts = []struct {
	name       string
	before     string
	after      string
	notForJSON bool // the sample itself contains quotes or newlines
}{
	{"bare", "", "", false},
	{"prose", "here you go: ", " — keep it safe.", false},
	{"cjk", "我的key是", "谢谢", false},
	{"lines", "line one\n", "\nline three", false},
	{"json", `{"role":"user","content":"`, `"}`, true},
	{"markdown", "**token**: `", "` (rotate me)", false},
	{"fence", "```bash\nexport VALUE=", "\n```\n", false},
}

// TestEveryPatternHasPositive guarantees no pattern is dead: each label
// has a generated example that is found, exactly, in every context.
func TestEveryPatternHasPositive(t *testing.T) {
	t.Parallel()
	s := newTestScanner(t, ScannerConfig{EnableEmail: true, EnablePhone: true})
	r := rand.New(rand.NewPCG(1, 2))
	for _, p := range s.Patterns() {
		for round := 0; round < 20; round++ {
			smp, ok := samples.For(r, p.Label)
			if !ok {
				t.Fatalf("%s: no positive example generator", p.Label)
			}
			for _, c := range contexts {
				if c.notForJSON && (strings.ContainsAny(smp.Text(), "\"\n") || smp.Pre != "") {
					continue
				}
				if c.name == "fence" && smp.Pre != "" {
					continue // the fence adds its own assignment
				}
				text := c.before + smp.Text() + c.after
				wantStart := len(c.before) + len(smp.Pre)
				wantEnd := wantStart + len(smp.Secret)
				got := s.Scan(text)
				found := false
				for _, f := range got {
					if f.Label == p.Label && f.Start == wantStart && f.End == wantEnd {
						found = true
					}
				}
				if !found {
					t.Errorf("%s/%s: want span [%d,%d) in %q, got %+v", p.Label, c.name, wantStart, wantEnd, text, got)
				}
			}
			if t.Failed() {
				return
			}
		}
	}
}

type scanCase struct {
	name   string
	text   string
	labels []string // expected labels in order; nil means no findings
	span   string   // optional: the exact text of the first finding
}

func runScanCases(t *testing.T, s *Scanner, cases []scanCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := s.Scan(tc.text)
			var labels []string
			for _, f := range got {
				labels = append(labels, f.Label)
			}
			if strings.Join(labels, ",") != strings.Join(tc.labels, ",") {
				t.Fatalf("labels = %v, want %v (findings %+v)", labels, tc.labels, got)
			}
			if tc.span != "" && tc.text[got[0].Start:got[0].End] != tc.span {
				t.Fatalf("span = %q, want %q", tc.text[got[0].Start:got[0].End], tc.span)
			}
		})
	}
}

// Hand-built strings: repeat keeps literal credential shapes out of the
// source while staying readable.
func rep(s string, n int) string { return strings.Repeat(s, n) }

func TestScanPositives(t *testing.T) {
	t.Parallel()
	s := newTestScanner(t, ScannerConfig{})
	projKey := "sk-proj-" + rep("aB3dE5fG7h", 8)
	awsID := "AKIA" + "Q2W3E4R5T6Y7U8I9"
	ghp := "ghp_" + rep("aZ09bY18", 4) + "cX27"
	runScanCases(t, s, []scanCase{
		{"cjk glued key", "我的key是" + projKey + "谢谢", []string{"openai_project_key"}, projKey},
		{"ant before generic", "sk-ant-api03-" + rep("Qw3rTy7u", 8), []string{"anthropic_api_key"}, ""},
		{"aws id in ini", "[default]\naws_access_key_id=" + awsID + "\n", []string{"aws_access_key_id"}, awsID},
		{"aws secret value only", "aws_secret_access_key: " + rep("wJalrXUtnFEMI/K7MDENG/bPxRfiCY", 1) + "abcdEXAMPL",
			[]string{"aws_secret_access_key"}, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYabcdEXAMPL"},
		{"ghp in json", `{"token":"` + ghp + `"}`, []string{"github_pat"}, ghp},
		{"ghp in fence", "```\ngit clone https://" + ghp + "@github.com/x/y\n```", []string{"github_pat"}, ghp},
		{"postgres password only", "DATABASE_URL=postgres://app:s3cr3tPassW0rd@db:5432/x", []string{"postgres_url_password"}, "s3cr3tPassW0rd"},
		{"password assignment", "db:\n  password: Hunter2Hunter2\n", []string{"password_assignment"}, "Hunter2Hunter2"},
		{"card with dashes", "card 4111-1111-1111-1111 exp 12/27", []string{"credit_card"}, "4111-1111-1111-1111"},
		{"card plain then cvv", "4111111111111111 123", []string{"credit_card"}, "4111111111111111"},
		{"card next to cjk", "卡号4111111111111111谢谢", []string{"credit_card"}, "4111111111111111"},
		{"amex", "amex 3782 822463 10005.", []string{"credit_card"}, "3782 822463 10005"},
		{"ssn", "SSN: 123-45-6789.", []string{"us_ssn"}, "123-45-6789"},
		{"iban spaced", "IBAN DE89 3704 0044 0532 0130 00 thanks", []string{"iban"}, "DE89 3704 0044 0532 0130 00"},
		{"iban compact", "GB82WEST12345698765432", []string{"iban"}, "GB82WEST12345698765432"},
		{"pem multi-line", "key:\n-----BEGIN EC PRIVATE KEY-----\n" + rep("MHcCAQEEIBk9", 6) + "\n-----END EC PRIVATE KEY-----\nbye",
			[]string{"private_key_block"}, ""},
		{"pgp block", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + rep("lQdGBF", 10) + "\n-----END PGP PRIVATE KEY BLOCK-----",
			[]string{"private_key_block"}, ""},
		{"two findings", "ghp " + ghp + " and " + awsID, []string{"github_pat", "aws_access_key_id"}, ghp},
		{"square sandbox-style token", "SQUARE_TOKEN=sq0atp-" + rep("Ab3_Cd4-Ef5", 2), []string{"square_access_token"}, "sq0atp-" + rep("Ab3_Cd4-Ef5", 2)},
		{"stripe test key", "sk_test_" + rep("4eC39HqLyjWD", 2), []string{"stripe_secret_key"}, ""},
		{"slack config token", "xoxe.xoxp-1-" + rep("Mi0yLTEyMzQ1", 10), []string{"slack_token"}, ""},
		{"discord bot prefix", `discord_token: "Bot M` + rep("Tk2NzY4", 3) + "ab." + "G1a2b3." + rep("xYz09_-q", 4) + `"`,
			[]string{"discord_bot_token"}, "M" + rep("Tk2NzY4", 3) + "ab." + "G1a2b3." + rep("xYz09_-q", 4)},
		{"gitlab dotted", "glpat-" + rep("aB3dE", 5) + ".01.abc12def", []string{"gitlab_pat"}, "glpat-" + rep("aB3dE", 5) + ".01.abc12def"},
		{"encrypted pem", "-----BEGIN ENCRYPTED PRIVATE KEY-----\n" + rep("MIIFHDBOBgkqhkiG9w0BBQ0wQTAp", 3) + "\n-----END ENCRYPTED PRIVATE KEY-----",
			[]string{"private_key_block"}, ""},
		{"mysql password", "mysql://root:" + rep("pA55", 3) + "@127.0.0.1/db", []string{"mysql_url_password"}, rep("pA55", 3)},
		{"api_key in yaml", "openai:\n  api_key: \"" + rep("q1W2e3R4", 3) + "\"\n", []string{"secret_assignment"}, rep("q1W2e3R4", 3)},
		{"bearer jwt", "Authorization: Bearer " + base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256","kid":"k1"}`)) + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"42"}`)) + "." + rep("sIg_nAt-uRe", 4),
			[]string{"jwt"}, ""},
	})
}

func TestScanNegatives(t *testing.T) {
	t.Parallel()
	s := newTestScanner(t, ScannerConfig{})
	runScanCases(t, s, []scanCase{
		{"git sha", "fixed in commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904 yesterday", nil, ""},
		{"uuid", "request 123e4567-e89b-12d3-a456-426614174000 failed", nil, ""},
		{"base64 image", "![x](data:image/png;base64," + rep("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk", 5) + ")", nil, ""},
		{"card failing luhn", "order 4111 1111 1111 1112 shipped", nil, ""},
		{"16 digits unknown iin", "tracking 9400111899223197428490", nil, ""},
		{"iban failing mod97", "IBAN DE88 3704 0044 0532 0130 00", nil, ""},
		{"iban compact failing", "GB83WEST12345698765432", nil, ""},
		{"skeleton", "the skeleton key-frame ask-me-anything desk-top", nil, ""},
		{"task ids", "see task-1234 and task-abcdefabcdefabcdefabcdefabcdefabcdef12", nil, ""},
		{"sk inside longer token", "xsk-" + rep("aB3dE5fG7h", 5), nil, ""},
		{"sk-learn slug", "pip install sk-learn-pipelines-for-the-whole-team-and-more", nil, ""},
		{"aws id too long", "AKIA" + "Q2W3E4R5T6Y7U8I9" + "ZZ", nil, ""},
		{"password placeholder", "password: ${DB_PASSWORD}\npassword=changeme\npassword: <your-password>\npassword = 'xxxxxxxx'", nil, ""},
		{"password prose", "password: required\nthe password field is hidden", nil, ""},
		{"password code ref", "password=config.database.password", nil, ""},
		{"token counts", "max_tokens: 4096\ntoken: 12345678\ntokenizer=cl100k_base", nil, ""},
		{"url without password", "https://user@host.example.org/path and postgres://db:5432/x", nil, ""},
		{"url placeholder", "postgres://user:password@localhost/db", nil, ""},
		{"ssn invalid area", "000-12-3456 666-12-3456 900-12-3456 123-00-4567 123-45-0000", nil, ""},
		{"dates and versions", "on 2024-05-12 v1.2.3 at 10:30, call 555-0100, $1,299.99", nil, ""},
		{"placeholder ghp", "ghp_" + rep("x", 36), nil, ""},
		{"eyJ not a jwt", "eyJ" + rep("hello_world", 2) + "." + rep("abcdefghij", 2) + "." + rep("klmnopqrst", 2), nil, ""},
		{"email off by default", "mail me at ada.lovelace@example.org", nil, ""},
		{"phone off by default", "call +1 415 555 0123", nil, ""},
		{"decimal digits", "pi is 3.14159265358979323846", nil, ""},
		{"kebab cache key", "cache-key-d41d8cd98f00b204e9800998ecf8427e", nil, ""},
		{"kebab sk words", "see sk-learn-0-24-2-compatible-models-for-python-3-11-and-up", nil, ""},
		{"pwd path", "PWD=/home/ada/projects\nOLDPWD=/tmp", nil, ""},
		{"password in prose", "I forgot my password again, can you remind me how to reset it?", nil, ""},
		{"secret mention", "the secret: be kind", nil, ""},
	})
}

func TestOptInEmailPhone(t *testing.T) {
	t.Parallel()
	s := newTestScanner(t, ScannerConfig{EnableEmail: true, EnablePhone: true})
	runScanCases(t, s, []scanCase{
		{"email", "mail me at ada.lovelace@example.org.", []string{"email"}, "ada.lovelace@example.org"},
		{"phone", "call +1 415 555 0123 today", []string{"phone"}, "+1 415 555 0123"},
		{"us phone", "call (415) 555-0123 today", []string{"phone"}, "(415) 555-0123"},
	})
}
