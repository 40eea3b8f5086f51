package converter

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestKafkaJsonConverter checks the format against Kafka Connect's own
// JsonConverter (schemas.enable=true): it must read and validate every
// golden file, and what it writes back must decode here to the same record
// (except float infinities, which JsonConverter reads as 0).
//
// Needs a JDK and SLUICE_CONNECT_JSON_CLASSPATH, the jars of
// org.apache.kafka:connect-json (3.9.0 checked) and its dependencies, e.g.
// from `mvn dependency:copy-dependencies` on a pom naming it.
func TestKafkaJsonConverter(t *testing.T) {
	cp := os.Getenv("SLUICE_CONNECT_JSON_CLASSPATH")
	if cp == "" {
		t.Skip("SLUICE_CONNECT_JSON_CLASSPATH not set (jars of org.apache.kafka:connect-json and its dependencies)")
	}
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "ConnectCheck.java"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ConnectCheck.java"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("javac", "-cp", cp, "-d", dir, filepath.Join(dir, "ConnectCheck.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "*.golden"))
	outDir := filepath.Join(dir, "out")
	if err := os.Mkdir(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("java", append([]string{"-cp", cp + string(os.PathListSeparator) + dir, "ConnectCheck", outDir}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("java: %v\n%s", err, out)
	}
	c := NewJSON(DefaultOptions())
	for _, f := range files {
		name := filepath.Base(f)
		if !strings.Contains(string(out), name+" OK") {
			t.Errorf("JsonConverter rejected %s:\n%s", name, out)
			continue
		}
		b, _ := os.ReadFile(f)
		k, v, _ := parseGolden(b)
		want, err := c.Decode(k, v)
		if err != nil {
			t.Fatal(err)
		}
		k2, _ := os.ReadFile(filepath.Join(outDir, name+".key"))
		v2, _ := os.ReadFile(filepath.Join(outDir, name+".value"))
		if len(k2) == 0 {
			k2 = nil
		}
		got, err := c.Decode(k2, v2)
		if err != nil {
			t.Errorf("%s: JsonConverter's bytes do not decode: %v\n%s", name, err, v2)
			continue
		}
		if name == "type_float32.golden" || name == "type_float64.golden" {
			continue // JsonConverter reads "Infinity" as 0
		}
		if d := recordDiff(&want, &got); d != "" {
			t.Errorf("%s: JsonConverter's bytes decode differently: %s", name, d)
		}
	}
}
