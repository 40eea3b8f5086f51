package app

import (
	"context"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
)

// replicatorPlugin is the source `type: rocketmq`: the RocketMQ replicator,
// which copies topics of the cluster it names to the cluster of the
// pipeline's rocketmq transport (rocketmq.Replicator).
func replicatorPlugin() plugin.Plugin {
	return plugin.Spec[rocketmq.ReplicatorConfig]{Kind: plugin.KindSource, Name: "rocketmq-replicator", Types: []string{"rocketmq"},
		Validate: func(c *rocketmq.ReplicatorConfig, sec *plugin.Section, doc *plugin.Config) error {
			if doc.Transport == nil || doc.Transport.Type != "rocketmq" {
				return sec.Err("type", "a rocketmq source copies to the cluster of a rocketmq transport: set transport.type: rocketmq")
			}
			return c.Validate()
		},
		NewSource: func(ctx context.Context, c *rocketmq.ReplicatorConfig, t *plugin.Task) (runtime.Source, error) {
			dst, ok := plugin.SectionConfig[rocketmq.Config](t, plugin.KindTransport)
			if !ok {
				return nil, t.Config.Source.Err("type", "a rocketmq source needs a rocketmq transport, the cluster it copies to")
			}
			if c.Tasks > 1 && t.HistoryDB == nil {
				return nil, t.Config.Source.Err("tasks", "tasks splits the copy among the workers of a sluice worker cluster; sluice run runs one task: leave tasks out")
			}
			r, err := rocketmq.NewReplicator(*c, *dst, t.Log.With("component", "replicator"))
			if err != nil {
				return nil, err
			}
			return r, r.SplitTask(t.SourceTask)
		},
		Keys: replicatorKeys}.Plugin()
}

var replicatorKeys = plugin.KeyDocs{
	"name_servers":   {Doc: "Name server addresses (host:port) of the cluster to copy from; the transport's cluster is the one copied to."},
	"cluster":        {Doc: "Name of the source cluster in each copy's sluice_src_cluster property; it must differ from target_cluster.", Default: "DefaultCluster"},
	"target_cluster": {Doc: "Name of the target cluster in the sluice_src_cluster of copies made from it (the cluster key of a replicator copying the other way): such a message is never copied back (loop prevention). Default: the transport's cluster."},
	"topic_prefix":   {Doc: "Each target topic is named topic_prefix + the source topic's name; empty keeps the name (identity naming)."},
	"tags":           {Doc: "Tag expression: copy only messages with one of these tags (TagA || TagB); * copies every message.", Default: "*"},
	"properties":     {Doc: "Copy only messages whose user properties have all these values (a map of name: value)."},
	"topics":         {Doc: "Topics to copy (or topics_regex); each is created on the target with the source's queue count (see target_topics)."},
	"topics_regex":   {Doc: "Instead of topics: copy every topic whose whole name matches (system topics excepted), looking for new ones every topics_refresh."},
	"topics_refresh": {Doc: "How often topics_regex looks for new topics, and the copied topics for queues they gained.", Default: rocketmq.DefaultTopicsRefresh.String()},
	"target_topics": {Doc: "sync: create each target topic and update it to match its source (at least the source's queue count, also when the source gains queues; its permissions with write access; its message type); " +
		"keep: create a missing one the same way but never change an existing one (one with fewer queues is then copied to by key hash, and a source that gains queues beyond the target's stops the replicator).",
		Default: rocketmq.TargetTopicsSync, Values: []string{rocketmq.TargetTopicsSync, rocketmq.TargetTopicsKeep}},
	"batch_size": {Doc: "Messages copied from one queue between two saves of its offset: what a kill -9 may copy twice, per queue (at most 1024).", Default: "64"},
	"from":       {Doc: "Where a queue without a saved offset starts.", Default: rocketmq.ReplicateFromBeginning, Values: []string{rocketmq.ReplicateFromBeginning, rocketmq.ReplicateFromNow}},
	"access_key": {Doc: "ACL access key on the source cluster; with secret_key."},
	"secret_key": {Doc: "ACL secret key on the source cluster."},
	"groups": {Doc: "Consumer groups whose committed offsets on the source are checkpointed for the target (translated through offset syncs, never past copied data), and whose subscription group settings are copied there at the start; " +
		"sluice replicator status|failover|switchover reports and applies them."},
	"offset_sync_messages": {Doc: "A queue records an offset sync (source offset to target offset) at least every this many copies.", Default: "100"},
	"offset_sync_interval": {Doc: "A batch's last copy is also recorded as an offset sync once this long has passed since the queue's last one (and always when the batch emptied the queue).",
		Default: rocketmq.DefaultOffsetSyncInterval.String()},
	"checkpoint_interval": {Doc: "How often the groups' offsets are read on the source and checkpointed.", Default: rocketmq.DefaultCheckpointInterval.String()},
	"sync_group_offsets": {Doc: "Write each checkpoint into the target's group offsets, for groups with no consumer online there and never moving an offset back; " +
		"without it only sluice replicator failover writes them.", Default: "false"},
	"heartbeat_topic": {Doc: "A topic of the source (created there in the cluster that the cluster key names when missing) that the replicator writes a heartbeat to every heartbeat_interval and copies like the others: " +
		"sluice_replicator_heartbeat_age_seconds measures the replication latency from it. Empty: no heartbeats (the replicator then only reads the source)."},
	"heartbeat_interval": {Doc: "How often a heartbeat is written.", Default: rocketmq.DefaultHeartbeatInterval.String()},
	"tasks": {Doc: "In a sluice worker cluster: how many tasks (each with its own lease and position, on any worker) split the source queues among them; " +
		"fixed once offsets are saved, and a topic that gains queues stops it. sluice run runs one.", Default: "1"},
}
