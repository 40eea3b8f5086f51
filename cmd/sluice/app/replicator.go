package app

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
)

// cmdReplicator is `sluice replicator status|failover|switchover --config
// FILE`: the synced groups of a replicator's saved checkpoints on the
// target cluster (lag, checkpoint age, duplicate window); with failover
// their checkpoints written into the target's group offsets; with
// switchover, once the running replicator has copied everything, their
// final checkpoints written there (rocketmq.Switchover).
func cmdReplicator(args []string, stdout io.Writer) error {
	if len(args) == 0 || (args[0] != "status" && args[0] != "failover" && args[0] != "switchover") {
		return fmt.Errorf("replicator: say status, failover or switchover: %w", runtime.ErrConfig)
	}
	fs, path, _ := configFlag("replicator", args[1:])
	asJSON := fs.Bool("json", false, "print the groups as a JSON array")
	groups := fs.String("groups", "", "switchover: the groups to switch, comma-separated (default: the source section's groups)")
	timeout := fs.Duration("timeout", time.Minute, "switchover: how long to wait for the replicator to copy everything")
	cfg, err := loadConfig(fs, path, args[1:])
	if err != nil {
		return err
	}
	d, err := decodeAll(cfg, "source")
	if err != nil {
		return err
	}
	if err := isReplicator(cfg, d); err != nil {
		return err
	}
	ctx := context.Background()
	store, err := openPositions(ctx, d.positions)
	if err != nil {
		return err
	}
	pos, err := loadSourcePosition(ctx, store, cfg, true)
	if err != nil {
		return err
	}
	failover := args[0] != "status"
	var sts []rocketmq.GroupStatus
	if args[0] == "switchover" {
		var names []string
		if *groups != "" {
			names = strings.Split(*groups, ",")
		}
		load := func(ctx context.Context) ([]byte, error) { return loadSourcePosition(ctx, store, cfg, true) }
		rep, err := rocketmq.Switchover(ctx, *d.configs[plugin.KindSource].(*rocketmq.ReplicatorConfig), *d.rocketmq, load, names, *timeout)
		if err != nil {
			return err
		}
		sts = rep.Groups
	} else if sts, err = rocketmq.ReplicaGroups(ctx, *d.rocketmq, pos, failover); err != nil {
		return err
	}
	if err := printGroups(stdout, sts, failover, *asJSON); err != nil {
		return err
	}
	var online []string
	for _, st := range sts {
		if st.Online && failover {
			online = append(online, st.Group)
		}
	}
	if len(online) > 0 {
		return fmt.Errorf("groups %s have consumers online on the target: their offsets there were not written; stop them and run %s again", strings.Join(online, ", "), args[0])
	}
	return nil
}

// isReplicator refuses a config whose source is not the replicator.
func isReplicator(cfg *plugin.Config, d *decoded) error {
	if _, ok := d.configs[plugin.KindSource].(*rocketmq.ReplicatorConfig); !ok || d.rocketmq == nil {
		return fmt.Errorf("%s is not a replicator (source type rocketmq, transport type rocketmq): %w: %w", cmp.Or(cfg.File, cfg.Name), runtime.ErrConfig, engine.ErrNoGroups)
	}
	return nil
}

// groupsForCluster is cluster.Control's GroupsOf: a replicator connector's
// groups on its target from the position the coordinator keeps, from any
// worker (the source task may run elsewhere).
func groupsForCluster(ctx context.Context, cfg *plugin.Config, position []byte, apply bool) (any, error) {
	d, err := decodeTask(cfg, "", true)
	if err != nil {
		return nil, err
	}
	if err := isReplicator(cfg, d); err != nil {
		return nil, err
	}
	sts, err := rocketmq.ReplicaGroups(ctx, *d.rocketmq, position, apply)
	if sts == nil && err == nil {
		sts = []rocketmq.GroupStatus{}
	}
	return sts, err
}

// switchoverForCluster is cluster.Control's SwitchOf: a replicator
// connector's planned switchover from any worker, load reading the
// position the coordinator keeps (the source task may run elsewhere).
func switchoverForCluster(ctx context.Context, cfg *plugin.Config, load func(context.Context) ([]byte, error), groups []string, timeout time.Duration) (any, error) {
	d, err := decodeTask(cfg, "", true)
	if err != nil {
		return nil, err
	}
	if err := isReplicator(cfg, d); err != nil {
		return nil, err
	}
	// A task just created or assigned has saved no position yet: wait for
	// its first one, within the timeout.
	start := time.Now()
	for {
		pos, err := load(ctx)
		if err != nil {
			return nil, err
		}
		if len(pos) > 0 {
			break
		}
		if time.Since(start) >= timeout {
			return nil, fmt.Errorf("switchover after %v: %w: the replicator has saved no position yet (is it running?): %w", timeout, rocketmq.ErrNotDrained, context.DeadlineExceeded)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return rocketmq.Switchover(ctx, *d.configs[plugin.KindSource].(*rocketmq.ReplicatorConfig), *d.rocketmq, load, groups, timeout-time.Since(start))
}

// printGroups prints sts as a table, or as JSON.
func printGroups(w io.Writer, sts []rocketmq.GroupStatus, failover, asJSON bool) error {
	if asJSON {
		if sts == nil {
			sts = []rocketmq.GroupStatus{}
		}
		return json.NewEncoder(w).Encode(sts)
	}
	if len(sts) == 0 {
		_, err := fmt.Fprintln(w, "no checkpoints: set groups in the source section, and let the replicator run for a checkpoint_interval")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "GROUP\tQUEUES\tLAG\tCHECKPOINT_AGE_S\tDUPLICATE_WINDOW\tONLINE"
	if failover {
		head += "\tAPPLIED\tKEPT"
	}
	fmt.Fprintln(tw, head)
	for _, st := range sts {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%d\t%v", st.Group, st.Queues, st.Lag, st.CheckpointAge, st.DuplicateWindow, st.Online)
		if failover {
			fmt.Fprintf(tw, "\t%d\t%d", st.Applied, st.Kept)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
