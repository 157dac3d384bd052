package extract

import "testing"

func TestContentFree(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"ok thanks so much!", true},
		{"Hi Alice!", true},
		{"Alice", true},
		{"Alice Chen", true},
		{"Thanks,\nAlice Chen", true},
		{"Best regards, Bob", true},
		{"好的，谢谢！", true},
		{"🙂", true},
		{"I live in Shanghai now.", false},
		{"Alice moved to Shanghai.", false},
		{"Thanks for booking flight QX123.", false},
		{"我搬到上海了。", false},
		{"Order A-7731-QX", false},
	} {
		if got := contentFree(tc.s); got != tc.want {
			t.Errorf("contentFree(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}
