package defense

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestPolicyJSONRoundTrip(t *testing.T) {
	t.Parallel()
	p := Policy{
		Default:     ActionRedact,
		Categories:  map[string]Action{CategoryPayment: ActionBlock, CategoryPII: ActionAllow},
		Labels:      map[string]Action{"jwt": ActionAllow, "github_pat": ActionBlock},
		EnableEmail: true,
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"default":"redact","categories":{"payment":"block","pii":"allow"},"labels":{"github_pat":"block","jwt":"allow"},"enable_email":true}`
	if string(b) != want {
		t.Fatalf("json = %s\nwant  %s", b, want)
	}
	var back Policy
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, back) {
		t.Fatalf("round trip = %+v, want %+v", back, p)
	}
	var empty Policy
	if err := json.Unmarshal([]byte(`{}`), &empty); err != nil || empty.Validate() != nil {
		t.Fatalf("empty policy: %v %v", err, empty.Validate())
	}
	if got := empty.ActionFor("jwt", CategoryJWT); got != ActionRedact {
		t.Fatalf("empty policy action = %q, want redact", got)
	}
}

func TestPolicyValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		p       Policy
		wantErr string // substring naming the field; "" means valid
	}{
		{"default ok", DefaultPolicy(), ""},
		{"bad default", Policy{Default: "drop"}, "policy.default"},
		{"bad category", Policy{Categories: map[string]Action{"paymnt": ActionBlock}}, `policy.categories["paymnt"]: unknown category`},
		{"bad category action", Policy{Categories: map[string]Action{"payment": "nuke"}}, `policy.categories["payment"]: unknown action`},
		{"bad label", Policy{Labels: map[string]Action{"aws_secret_key": ActionBlock}}, `policy.labels["aws_secret_key"]: unknown label`},
		{"bad label action", Policy{Labels: map[string]Action{"jwt": "BLOCK"}}, `policy.labels["jwt"]: unknown action`},
	} {
		err := tc.p.Validate()
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%s: unexpected error %v", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: err = %v, want containing %q", tc.name, err, tc.wantErr)
		}
	}
}

func TestActionPrecedence(t *testing.T) {
	t.Parallel()
	p := Policy{
		Default:    ActionAllow,
		Categories: map[string]Action{CategorySourceControl: ActionBlock},
		Labels:     map[string]Action{"github_pat": ActionRedact},
	}
	for _, tc := range []struct {
		label, cat string
		want       Action
	}{
		{"github_pat", CategorySourceControl, ActionRedact},
		{"npm_token", CategorySourceControl, ActionBlock},
		{"jwt", CategoryJWT, ActionAllow},
	} {
		if got := p.ActionFor(tc.label, tc.cat); got != tc.want {
			t.Errorf("ActionFor(%s) = %s, want %s", tc.label, got, tc.want)
		}
	}
}

func TestApplyRedactionExact(t *testing.T) {
	t.Parallel()
	s := newTestScanner(t, ScannerConfig{})
	ghp := "ghp_" + rep("aZ09bY18", 4) + "cX27"
	in := "我的token是" + ghp + "谢谢, db postgres://app:s3cr3tPassW0rd@db:5432/x, card 4111 1111 1111 1111."
	res, err := s.Apply(in, DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	want := "我的token是[REDACTED:github_pat]谢谢, db postgres://app:[REDACTED:postgres_url_password]@db:5432/x, card [REDACTED:credit_card]."
	if res.Text != want {
		t.Fatalf("text = %q\nwant   %q", res.Text, want)
	}
	if res.Blocked || len(res.Findings) != 3 {
		t.Fatalf("blocked=%v findings=%+v", res.Blocked, res.Findings)
	}
	for _, f := range res.Findings {
		if f.Action != ActionRedact {
			t.Errorf("%s action = %q", f.Label, f.Action)
		}
	}

	// Allow keeps the value; the finding is still reported.
	res, err = s.Apply(in, Policy{Labels: map[string]Action{"credit_card": ActionAllow}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Text, "4111 1111 1111 1111") || strings.Contains(res.Text, ghp) {
		t.Fatalf("allow policy text = %q", res.Text)
	}

	// Clean text comes back unchanged and without findings.
	res, err = s.Apply("just a normal chat message", DefaultPolicy())
	if err != nil || res.Text != "just a normal chat message" || res.Findings != nil {
		t.Fatalf("clean: %+v %v", res, err)
	}
}

func TestApplyBlockNeverEchoesSecret(t *testing.T) {
	t.Parallel()
	s := newTestScanner(t, ScannerConfig{})
	key := "sk_live_" + rep("Z9y8X7w6", 4)
	pw := "Tr0ub4dorAndSome"
	in := "stripe " + key + "\npassword: " + pw
	res, err := s.Apply(in, Policy{Categories: map[string]Action{CategoryPayment: ActionBlock, CategoryGeneric: ActionBlock}})
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("err = %v, want ErrBlocked", err)
	}
	var be *BlockedError
	if !errors.As(err, &be) || !reflect.DeepEqual(be.Labels, []string{"password_assignment", "stripe_secret_key"}) {
		t.Fatalf("blocked error = %#v", err)
	}
	if !res.Blocked || !reflect.DeepEqual(res.BlockedLabels, be.Labels) {
		t.Fatalf("result = %+v", res)
	}
	for _, out := range []string{err.Error(), res.Text, strings.Join(res.BlockedLabels, ",")} {
		if strings.Contains(out, key) || strings.Contains(out, pw) {
			t.Fatalf("block output leaks the secret: %q", out)
		}
	}
	b, _ := json.Marshal(res)
	if strings.Contains(string(b), key) || strings.Contains(string(b), pw) {
		t.Fatalf("result JSON leaks the secret: %s", b)
	}
}

func TestApplyInvalidPolicy(t *testing.T) {
	t.Parallel()
	s := newTestScanner(t, ScannerConfig{})
	_, err := s.Apply("x", Policy{Default: "nope"})
	if err == nil || errors.Is(err, ErrBlocked) {
		t.Fatalf("err = %v, want a validation error", err)
	}
}

func TestApplyPolicyEnablesOptIn(t *testing.T) {
	t.Parallel()
	s := newTestScanner(t, ScannerConfig{})
	res, err := s.Apply("mail ada@corp-mail.net", Policy{EnableEmail: true})
	if err != nil || res.Text != "mail [REDACTED:email]" {
		t.Fatalf("res = %+v err = %v", res, err)
	}
	res, _ = s.Apply("mail ada@corp-mail.net", Policy{})
	if res.Text != "mail ada@corp-mail.net" {
		t.Fatalf("email redacted without opt-in: %q", res.Text)
	}
}
