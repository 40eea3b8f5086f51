package app

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicecdc/sluice/runtime/kafka"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// TestTailCommandKafka is TestTailCommand over the Kafka transport on the
// real broker: `sluice tail` reads the pipeline's topics outside its
// consumer group, "queue" being the partition, and the group has no
// offsets afterwards.
func TestTailCommandKafka(t *testing.T) {
	brokers := strings.Split(schematest.NeedServers(t, "SLUICE_KAFKA_BROKERS")[0], ",")
	name := fmt.Sprintf("tail_it_%d", rand.IntN(1e9))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kc := kafka.Config{Brokers: brokers, Pipeline: name, Partitions: 2}
	topics := []string{kafka.TopicName(name, "shop", "orders"), kafka.TopicName(name, "shop", "items")}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.Background(), topics...) })
	recs := tailRecords()
	pub, err := kafka.NewPublisher(ctx, kc, nil)
	if err != nil {
		t.Fatal(err)
	}
	publishTail(ctx, t, pub, recs)

	cfgPath := filepath.Join(t.TempDir(), "p.yaml")
	writeFile(t, cfgPath, fmt.Sprintf(`name: %s
transport:
  type: kafka
  brokers: [%q]
  topics: [%s]
sink:
  type: postgres
  dsn: postgres://unused@127.0.0.1:1/x
`, name, brokers[0], strings.Join(topics, ", ")))
	checkTail(t, cfgPath, topics, len(recs))

	// On a fresh broker the group coordinator (its __consumer_offsets
	// topic) may still be starting: COORDINATOR_NOT_AVAILABLE, retriable.
	var offsets kadm.OffsetResponses
	schematest.Eventually(t, time.Minute, 200*time.Millisecond, "fetch the sink group's offsets", func() (bool, string) {
		offsets, err = adm.FetchOffsets(ctx, name+"-sink")
		return err == nil, fmt.Sprint(err)
	})
	if o := offsets.Sorted(); len(o) > 0 {
		t.Errorf("the sink's group has offsets after tail: %v", o)
	}
}
