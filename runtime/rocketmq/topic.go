package rocketmq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/schema"
)

// topicCreator is what ensureTopic needs from the admin client.
type topicCreator interface {
	CreateTopic(ctx context.Context, opts ...admin.OptionCreate) error
}

// EnsureTopic creates topic with cfg.Queues read and write queues on every
// master broker of cfg.Cluster, unless the name servers already route it (an
// existing topic keeps its queue count). It returns once the name servers
// route the topic.
func EnsureTopic(ctx context.Context, cfg Config, topic string) error {
	cfg, err := cfg.baseDefaults()
	if err != nil {
		return err
	}
	if err := checkCredentials(ctx, cfg); err != nil {
		return err
	}
	setClientLogger(nil)
	adm, err := newAdmin(cfg)
	if err != nil {
		return err
	}
	defer adm.Close()
	_, err = ensureTopic(ctx, adm, cfg, topic)
	return err
}

// setup is how the Publisher, Subscriber and DeadLetter constructors
// start: cfg with its defaults, the brokers' acceptance of its credentials
// (checkCredentials), log (slog.Default() when nil) as the client's logger
// too, and an admin client the caller must close.
func setup(ctx context.Context, cfg Config, log *slog.Logger) (Config, *slog.Logger, admin.Admin, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return cfg, nil, nil, err
	}
	if err := checkCredentials(ctx, cfg); err != nil {
		return cfg, nil, nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	setClientLogger(log)
	adm, err := newAdmin(cfg)
	if err != nil {
		return cfg, nil, nil, err
	}
	return cfg, log, adm, nil
}

func newAdmin(cfg Config) (admin.Admin, error) {
	opts := []admin.AdminOption{admin.WithResolver(primitive.NewPassthroughResolver(cfg.NameServers))}
	if cfg.hasCredentials() {
		opts = append(opts, admin.WithCredentials(cfg.credentials()))
	}
	adm, err := admin.NewAdmin(opts...)
	if err != nil {
		return nil, fmt.Errorf("rocketmq: cannot create admin client for %v: %w", cfg.NameServers, err)
	}
	if cfg.hasCredentials() {
		return signedAdmin{adm, cfg.credentials()}, nil
	}
	return adm, nil
}

// topicVisibleTimeout bounds the wait for a created topic to be routed.
var topicVisibleTimeout = 30 * time.Second

// ensureTopic returns topic's queue set (queueSet): the one recorded on the
// name servers, after checking that the topic's route shows no other
// (ErrQueueSetChanged), or else the topic's route, recorded, once the
// topic exists (created with cfg.Queues queues on every master broker of
// cfg.Cluster when the name servers route none of it). A topic whose set is
// recorded is never created again: a route without it means its brokers
// are down.
func ensureTopic(ctx context.Context, adm topicCreator, cfg Config, topic string) (queueSet, error) {
	if topic != sanitizeName(topic) {
		return nil, fmt.Errorf("%w: topic %q: names match ^[%%|a-zA-Z0-9_-]+$ and have at most %d characters", ErrConfig, topic, maxNameLen)
	}
	conf, missing, err := fetchOrderConf(ctx, cfg.NameServers, topic)
	switch {
	case err == nil:
		return recordedQueueSet(ctx, cfg, topic, conf, missing)
	case !errors.Is(err, errNoOrderConf):
		return nil, err
	}
	set, err := createTopic(ctx, adm, cfg, topic)
	if err != nil {
		return nil, err
	}
	if err := putOrderConf(ctx, cfg.NameServers, topic, set.String()); err != nil {
		return nil, err
	}
	return set, nil
}

// recordedQueueSet is ensureTopic for a topic whose queue set conf is
// recorded (not on the name servers missing, which get it now).
func recordedQueueSet(ctx context.Context, cfg Config, topic, conf string, missing []string) (queueSet, error) {
	set, err := parseRecorded(topic, conf)
	if err != nil {
		return nil, err
	}
	route, err := fetchRoute(ctx, cfg.NameServers, topic)
	if err != nil && !errors.Is(err, errTopicNotExist) {
		return nil, err
	}
	if err := set.changedFrom(topic, routeQueueSet(route)); err != nil {
		return nil, err
	}
	if len(missing) > 0 {
		// A name server that lost it (replaced, its store wiped) gets it
		// back, so that it still answers when the others are down.
		if err := putOrderConf(ctx, missing, topic, conf); err != nil {
			return nil, err
		}
	}
	return set, nil
}

// parseRecorded is parseQueueSet of conf, topic's queue set as recorded
// on the name servers; an error is fatal.
func parseRecorded(topic, conf string) (queueSet, error) {
	set, err := parseQueueSet(conf)
	if err != nil {
		return nil, schema.Fatal(fmt.Errorf("%w: topic %q: the queue set recorded on the name servers (ORDER_TOPIC_CONFIG) is not one: %w; fix it with `"+orderConfAdminUsage+"`",
			ErrConfig, topic, err, topic, "put -v 'broker-a:4;broker-b:4'"))
	}
	return set, nil
}

// createTopic creates topic unless the name servers route it, and returns
// the queue set its route shows.
func createTopic(ctx context.Context, adm topicCreator, cfg Config, topic string) (queueSet, error) {
	route, err := fetchRoute(ctx, cfg.NameServers, topic)
	if err == nil {
		if set := routeQueueSet(route); len(set) > 0 {
			return wholeRoute(ctx, cfg, topic, set)
		}
	} else if !errors.Is(err, errTopicNotExist) {
		return nil, err
	}
	ci, err := fetchClusterInfo(ctx, cfg.NameServers)
	if err != nil {
		return nil, err
	}
	masters := ci.masters(cfg.Cluster)
	if len(masters) == 0 {
		return nil, fmt.Errorf("rocketmq: cluster %q has no master broker registered with name servers %v: check the transport's cluster (the broker's brokerClusterName) and that the broker is up", cfg.Cluster, cfg.NameServers)
	}
	create := func(addr string) error {
		err := adm.CreateTopic(ctx,
			admin.WithTopicCreate(topic),
			admin.WithBrokerAddrCreate(addr),
			admin.WithReadQueueNums(cfg.Queues),
			admin.WithWriteQueueNums(cfg.Queues))
		if errors.Is(err, ErrAuth) {
			return err // it names the broker and the topic; no retry helps
		}
		if err != nil {
			return fmt.Errorf("create topic %q on broker %s: %w", topic, addr, err)
		}
		return nil
	}
	// The admin client gives up after 5 s and does not check the broker's
	// answer, while a loaded broker may take longer: the route on the name
	// servers decides. Failed creates are sent again (they are idempotent).
	failed := map[string]error{}
	for _, addr := range masters {
		if err := create(addr); errors.Is(err, ErrAuth) {
			return nil, err
		} else if err != nil {
			failed[addr] = err
		}
	}
	want := cfg.Queues * len(masters)
	start := time.Now()
	lastCreate := start
	for {
		route, err := fetchRoute(ctx, cfg.NameServers, topic)
		if err != nil && !errors.Is(err, errTopicNotExist) {
			return nil, err
		}
		qs := route.writeQueues()
		if len(qs) >= want {
			return routeQueueSet(route), nil
		}
		if time.Since(start) > topicVisibleTimeout {
			var errs []error
			for _, e := range failed {
				errs = append(errs, e)
			}
			return nil, fmt.Errorf("rocketmq: topic %q: the name servers route %d of %d queues %s after creating it on %v: check the broker log (disk full? name refused?): %w",
				topic, len(qs), want, topicVisibleTimeout, masters, errors.Join(errs...))
		}
		if len(failed) > 0 && time.Since(lastCreate) > 5*time.Second {
			lastCreate = time.Now()
			for addr := range failed {
				if err := create(addr); err != nil {
					failed[addr] = err
				} else {
					delete(failed, addr)
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// wholeRoute returns the queue set of topic's route, set now, once it
// shows every master broker of cfg.Cluster, waiting up to
// topicVisibleTimeout for the others. A topic that another process is
// creating right now shows up on the name servers one broker at a time:
// taking the route of its first broker as the queue set, and recording it,
// made that process's publisher hash keys over another set than every
// later one (which read the set the creator recorded after it), so a
// key's changes went to two queues, consumed independently: an older
// change applied after a newer one, or skipped (the kill_source_and_sink
// contract property lost updates this way). A topic created on fewer
// brokers (by hand) keeps the route it shows once the wait is over; without
// the cluster table the route is taken as it is.
func wholeRoute(ctx context.Context, cfg Config, topic string, set queueSet) (queueSet, error) {
	ci, err := fetchClusterInfo(ctx, cfg.NameServers)
	if err != nil {
		return set, nil
	}
	var brokers []string
	for _, name := range ci.ClusterAddrTable[cfg.Cluster] {
		if ci.BrokerAddrTable[name].BrokerAddrs["0"] != "" {
			brokers = append(brokers, name)
		}
	}
	whole := func(set queueSet) bool {
		for _, b := range brokers {
			if !slices.ContainsFunc(set, func(q brokerQueues) bool { return q.Broker == b }) {
				return false
			}
		}
		return true
	}
	for start := time.Now(); !whole(set) && time.Since(start) < topicVisibleTimeout; {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		route, err := fetchRoute(ctx, cfg.NameServers, topic)
		if err != nil {
			return nil, err
		}
		if s := routeQueueSet(route); len(s) >= len(set) {
			set = s
		}
	}
	return set, nil
}

// topicCache creates each topic once and remembers its queue set.
type topicCache struct {
	cfg  Config
	adm  topicCreator
	mu   sync.Mutex
	qs   map[string][]queue
	sets map[string]queueSet // the set each of qs's lists came from
}

func newTopicCache(cfg Config, adm topicCreator) *topicCache {
	return &topicCache{cfg: cfg, adm: adm, qs: map[string][]queue{}, sets: map[string]queueSet{}}
}

// queues returns the queues of topic's queue set (ensureTopic), creating
// the topic on first use.
func (c *topicCache) queues(ctx context.Context, topic string) ([]queue, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if qs, ok := c.qs[topic]; ok {
		return qs, nil
	}
	set, err := ensureTopic(ctx, c.adm, c.cfg, topic)
	if err != nil {
		return nil, err
	}
	qs := set.queues()
	c.qs[topic] = qs
	c.sets[topic] = set
	return qs, nil
}

// recheck compares the queue set of each topic met so far, the one keys
// are hashed over, with what the name servers show now, as ensureTopic
// does when a publisher starts: a fatal ErrQueueSetChanged when a topic's
// route shows queues the set lacks or another count on a broker (queues
// added with updateTopic, the topic created on a new broker, queues taken
// away), or when the set recorded on the name servers is another one
// (recorded anew while the publisher runs). A name server that lost the
// record gets it back. A name server that cannot be asked is no change:
// the next recheck asks again.
func (c *topicCache) recheck(ctx context.Context) error {
	c.mu.Lock()
	sets := maps.Clone(c.sets)
	c.mu.Unlock()
	for _, topic := range slices.Sorted(maps.Keys(sets)) {
		set := sets[topic]
		conf, missing, err := fetchOrderConf(ctx, c.cfg.NameServers, topic)
		switch {
		case err == nil:
			recorded, err := parseRecorded(topic, conf)
			if err != nil {
				return err
			}
			if recorded.String() != set.String() {
				return schema.Fatal(fmt.Errorf("%w: topic %q: the queue set recorded on the name servers is now %s, while this source hashes keys over %s, "+
					"the set recorded when it started: sluice does not switch sets while it runs, which would apply a key's older changes after its newer ones. "+
					"Stop the source, wait until the sinks have applied everything of the topic, and start it again: it hashes keys over the recorded set then "+
					"(or record the old set again with `"+orderConfAdminUsage+" -v '%s'`)",
					ErrQueueSetChanged, topic, recorded, set, topic, "put", set))
			}
		case errors.Is(err, errNoOrderConf):
			missing = c.cfg.NameServers
		default:
			continue
		}
		if len(missing) > 0 {
			if err := putOrderConf(ctx, missing, topic, set.String()); err != nil {
				continue
			}
		}
		route, err := fetchRoute(ctx, c.cfg.NameServers, topic)
		if err != nil && !errors.Is(err, errTopicNotExist) {
			continue
		}
		if err := set.changedFrom(topic, routeQueueSet(route)); err != nil {
			return err
		}
	}
	return nil
}

// live returns the queues of topic that the name servers route to a live
// master now.
func (c *topicCache) live(ctx context.Context, topic string) ([]queue, error) {
	route, err := fetchRoute(ctx, c.cfg.NameServers, topic)
	if err != nil && !errors.Is(err, errTopicNotExist) {
		return nil, err
	}
	return route.writeQueues(), nil
}
