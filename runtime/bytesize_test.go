package runtime

import "testing"

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]ByteSize{"16MiB": 16 << 20, "512 KiB": 512 << 10, "1048576": 1 << 20, "2GiB": 2 << 30, "200MB": 200 << 20, "off": -1, "1.5MiB": 3 << 19} {
		got, err := ParseByteSize(in)
		if err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1MiB", "ten", "16 parsecs"} {
		if _, err := ParseByteSize(in); err == nil {
			t.Errorf("ParseByteSize(%q) accepted", in)
		}
	}
}
