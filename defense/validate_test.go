package defense

import "testing"

func TestLuhn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"4111111111111111", true},
		{"4111111111111112", false},
		{"378282246310005", true},
		{"5555555555554444", true},
		{"79927398713", true},
		{"79927398710", false},
		{"0", false},
		{"", false},
		{"4111-1111", false}, // separators are stripped by the caller
	} {
		if got := Luhn(tc.in); got != tc.want {
			t.Errorf("Luhn(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestValidCard(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"4111111111111111", true},      // Visa 16
		{"4222222222222", true},         // Visa 13
		{"378282246310005", true},       // Amex 15
		{"37828224631000", false},       // Amex wrong length
		{"6011111111111117", true},      // Discover
		{"3530111333300000", true},      // JCB
		{"2223003122003222", true},      // Mastercard 2-series
		{"1234567812345670", false},     // Luhn-valid but no issuer starts with 1
		{"9999999999999995", false},     // Luhn-valid, unknown IIN
		{"41111111111111111111", false}, // too long
	} {
		if got := ValidCard(tc.in); got != tc.want {
			t.Errorf("ValidCard(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestIBAN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in         string
		mod97, all bool
	}{
		{"DE89370400440532013000", true, true},
		{"GB82WEST12345698765432", true, true},
		{"NL91ABNA0417164300", true, true},
		{"FR1420041010050500013M02606", true, true},
		{"NO9386011117947", true, true},
		{"DE88370400440532013000", false, false}, // check digits off by one
		{"GB82WEST1234569876543", false, false},  // wrong length and checksum
		{"XX89370400440532013000", false, false}, // unknown country
		{"de89370400440532013000", false, false}, // lower case is not compact form
	} {
		if got := IBANMod97(tc.in); got != tc.mod97 {
			t.Errorf("IBANMod97(%q) = %v, want %v", tc.in, got, tc.mod97)
		}
		if got := ValidIBAN(tc.in); got != tc.all {
			t.Errorf("ValidIBAN(%q) = %v, want %v", tc.in, got, tc.all)
		}
	}
}

func TestValidSSN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, g, s string
		want    bool
	}{
		{"123", "45", "6789", true},
		{"000", "45", "6789", false},
		{"666", "45", "6789", false},
		{"900", "45", "6789", false},
		{"123", "00", "6789", false},
		{"123", "45", "0000", false},
	} {
		if got := validSSN(tc.a, tc.g, tc.s); got != tc.want {
			t.Errorf("validSSN(%s-%s-%s) = %v, want %v", tc.a, tc.g, tc.s, got, tc.want)
		}
	}
}

func TestGenericValueFilters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"Hunter2Hunter2", true},
		{"correcthorsebattery", true},
		{"changeme", false},
		{"${DB_PASSWORD}", false},
		{"$DB_PASSWORD", false},
		{"%(password)s", false},
		{"<password>", false},
		{"xxxxxxxxxx", false},
		{"********", false},
		{"your_password_here", false},
		{"os.environ", false},
		{"request.form['pw']", false},
		{"getenv(", false},
		{"short", false},
		{"/home/ada/src", false},
		{"~/secrets/db.txt", false},
	} {
		if got := genericSecret(tc.in); got != tc.want {
			t.Errorf("genericSecret(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
