package rocketmq

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/schema"
)

// A fatal handler error (a row the target refuses under on_error: fail)
// stops the subscriber with that error instead of redelivering the batch
// every 10 s forever; a retriable one is still redelivered.
func TestSubscriberFatalHandlerErrorStops(t *testing.T) {
	s := testSubscriber(t)
	cctx, _ := orderlyCtx()
	retriable := errors.New("target down")
	res, _ := s.consume(context.Background(), cctx, func(context.Context, []schema.Record) error { return retriable }, []*primitive.MessageExt{messageOf(t, rec(1, 0), 2, 40, 0)}, 0)
	select {
	case <-s.closing:
		t.Fatal("a retriable handler error stopped the subscriber")
	default:
	}
	if res != consumer.SuspendCurrentQueueAMoment {
		t.Fatalf("retriable: result %v", res)
	}

	refused := schema.Fatal(errors.New(`new row violates check constraint "v_below_100"`))
	cctx, _ = orderlyCtx()
	res, _ = s.consume(context.Background(), cctx, func(context.Context, []schema.Record) error { return refused }, []*primitive.MessageExt{messageOf(t, rec(1, 0), 2, 41, 0)}, 0)
	if res != consumer.SuspendCurrentQueueAMoment {
		t.Fatalf("fatal: result %v (the batch must stay unacknowledged)", res)
	}
	select {
	case <-s.closing:
	default:
		t.Fatal("a fatal handler error does not stop the subscriber")
	}
	if !errors.Is(s.fatal, refused) || schema.ClassOf(s.fatal) != schema.ClassFatal || !strings.Contains(s.fatal.Error(), "offset 41") {
		t.Errorf("fatal error %v (class %v)", s.fatal, schema.ClassOf(s.fatal))
	}
}
