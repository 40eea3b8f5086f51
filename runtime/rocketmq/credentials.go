package rocketmq

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/schema"
)

// Broker authentication. A broker with authentication on (RocketMQ 5.x
// authenticationEnabled, "ACL 2.0", or the 4.x plain ACL) wants every
// request to carry the fields AccessKey and Signature: the base64 HMAC-SHA1,
// keyed with the secret key, of the values of all other fields sorted by
// name, followed by the body. rocketmq-client-go signs its own requests so
// (Config.credentials); signRequest does the same for the requests of this
// package's own remoting client (Tail, the credential check).

const (
	reqHeartbeat    = 34 // HEART_BEAT
	resNoPermission = 16 // NO_PERMISSION: authentication or authorization refused
)

// ErrAuth is wrapped by the error of a broker that refuses the request's
// credentials, or wants some and got none. It is fatal: a wrong secret does
// not fix itself.
var ErrAuth = errors.New("rocketmq: the broker refused the credentials")

// signRequest returns ext with AccessKey and Signature added when cred has
// an access key, else ext itself.
func signRequest(cred primitive.Credentials, ext map[string]string, body []byte) map[string]string {
	if cred.AccessKey == "" {
		return ext
	}
	out := make(map[string]string, len(ext)+2)
	for k, v := range ext {
		out[k] = v
	}
	out["AccessKey"] = cred.AccessKey
	keys := make([]string, 0, len(out))
	for k := range out {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	mac := hmac.New(sha1.New, []byte(cred.SecretKey))
	for _, k := range keys {
		mac.Write([]byte(out[k]))
	}
	mac.Write(body)
	out["Signature"] = base64.StdEncoding.EncodeToString(mac.Sum(nil))
	return out
}

// invokeSigned is invokeBody with the request signed with cred.
func invokeSigned(ctx context.Context, cred primitive.Credentials, addr string, code int, ext map[string]string, body []byte) (remotingHeader, []byte, error) {
	return invokeBody(ctx, addr, code, signRequest(cred, ext, body), body)
}

// authError returns the fatal error for a broker's NO_PERMISSION answer to a
// request signed with accessKey (empty: unsigned), nil for any other answer.
// It names the access key, never the secret.
func authError(accessKey, addr string, h remotingHeader) error {
	if h.Code != resNoPermission {
		return nil
	}
	remark := strings.TrimRight(strings.TrimSpace(h.Remark), ".")
	if accessKey == "" {
		return schema.Fatal(fmt.Errorf("%w: %s says %q: the broker requires authentication: set transport.access_key and transport.secret_key to a user of the broker",
			ErrAuth, addr, remark))
	}
	return schema.Fatal(fmt.Errorf("%w: %s says %q for access key %q: check transport.access_key and transport.secret_key against the broker's users, and the user's permissions on the topics and groups",
		ErrAuth, addr, remark, accessKey))
}

// sourceKeys returns err, when it is a refusal of the credentials (ErrAuth),
// naming the source section's keys instead of the transport's: err came
// from a request the replicator signed with them.
func sourceKeys(err error) error {
	if !errors.Is(err, ErrAuth) {
		return err
	}
	return sourceRefusal{err}
}

type sourceRefusal struct{ error }

func (e sourceRefusal) Error() string {
	return strings.NewReplacer("transport.access_key", "source.access_key", "transport.secret_key", "source.secret_key").Replace(e.error.Error())
}

func (e sourceRefusal) Unwrap() error { return e.error }

// heartbeatBody is an empty heartbeat: it registers no producer or consumer
// group, so the broker authenticates it and needs no permission for it.
var heartbeatBody = []byte(`{"clientID":"sluice-credential-check","producerDataSet":[],"consumerDataSet":[]}`)

// checkCredentials sends one signed, empty heartbeat to every master broker
// of cfg.Cluster and returns the fatal ErrAuth error of the first that
// refuses the credentials (or wants some). The client library only logs
// such refusals and retries forever, so without this check a wrong secret
// would look like a pipeline that is merely idle. Brokers it cannot reach
// are left to the caller's own requests, which report them.
func checkCredentials(ctx context.Context, cfg Config) error {
	ci, err := fetchClusterInfo(ctx, cfg.NameServers)
	if err != nil {
		return nil
	}
	for _, addr := range ci.masters(cfg.Cluster) {
		h, _, err := invokeSigned(ctx, cfg.credentials(), addr, reqHeartbeat, nil, heartbeatBody)
		if err != nil {
			continue
		}
		if err := authError(cfg.AccessKey, addr, h); err != nil {
			return err
		}
	}
	return nil
}

const reqUpdateAndCreateTopic = 17 // UPDATE_AND_CREATE_TOPIC

// signedAdmin is the admin client with CreateTopic sent, signed, by this
// package's remoting client. rocketmq-client-go's admin signs a request only
// after RegisterACL, which only its GetAllSubscriptionGroup calls: its
// CreateTopic reaches a broker with authentication unsigned, is refused, and
// the refusal is not read (CreateTopic returns nil).
type signedAdmin struct {
	admin.Admin
	cred primitive.Credentials
}

// CreateTopic creates or updates a topic on one broker and returns the
// broker's refusal, if any.
func (a signedAdmin) CreateTopic(ctx context.Context, opts ...admin.OptionCreate) error {
	c := admin.TopicConfigCreate{DefaultTopic: "defaultTopic", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6, TopicFilterType: "SINGLE_TAG"}
	for _, o := range opts {
		o(&c)
	}
	h, _, err := invokeSigned(ctx, a.cred, c.BrokerAddr, reqUpdateAndCreateTopic, map[string]string{
		"topic": c.Topic, "defaultTopic": c.DefaultTopic, "readQueueNums": strconv.Itoa(c.ReadQueueNums),
		"writeQueueNums": strconv.Itoa(c.WriteQueueNums), "perm": strconv.Itoa(c.Perm), "topicFilterType": c.TopicFilterType,
		"topicSysFlag": strconv.Itoa(c.TopicSysFlag), "order": strconv.FormatBool(c.Order),
	}, nil)
	if err != nil {
		return err
	}
	if err := authError(a.cred.AccessKey, c.BrokerAddr, h); err != nil {
		return err
	}
	if h.Code != resSuccess {
		return fmt.Errorf("broker answered code %d: %s", h.Code, h.Remark)
	}
	return nil
}

// checkSubscribe asks each broker of each topic for one message of its
// first queue as group would, without committing an offset, and returns the
// fatal ErrAuth error of a broker that refuses it: a user that may not
// subscribe would otherwise leave the consumer pulling in vain, only
// logging. Only with credentials (brokers with authorization).
func checkSubscribe(ctx context.Context, cfg Config, topics []string) error {
	if !cfg.hasCredentials() {
		return nil
	}
	for _, topic := range topics {
		qs, err := tailQueues(ctx, cfg.NameServers, topic)
		if err != nil {
			return nil // the consumer reports it
		}
		checked := map[string]bool{}
		for _, q := range qs {
			if checked[q.addr] {
				continue
			}
			checked[q.addr] = true
			h, _, err := invokeSigned(ctx, cfg.credentials(), q.addr, reqPullMessage, map[string]string{
				"consumerGroup": cfg.Group, "topic": topic, "queueId": strconv.Itoa(q.id), "queueOffset": "0", "maxMsgNums": "1",
				"sysFlag": strconv.Itoa(flagSubscription), "commitOffset": "0", "suspendTimeoutMillis": "0",
				"subscription": "*", "subVersion": "0", "expressionType": "TAG", "bname": q.broker,
			}, nil)
			if err != nil {
				continue
			}
			if err := authError(cfg.AccessKey, q.addr, h); err != nil {
				return err
			}
		}
	}
	return nil
}

const reqSendMessage = 10 // SEND_MESSAGE

// checkPublish sends one small message to queue 0 of topic on each broker
// of masters and returns the fatal ErrAuth error of a broker that refuses
// it (a user without Pub). Only with credentials (brokers with
// authorization); the caller deletes the topic, and the message with it.
func checkPublish(ctx context.Context, cfg Config, topic string, masters []string) error {
	if !cfg.hasCredentials() {
		return nil
	}
	for _, addr := range masters {
		h, _, err := invokeSigned(ctx, cfg.credentials(), addr, reqSendMessage, map[string]string{
			"producerGroup": sanitizeName(cfg.Pipeline + "-check"), "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
			"queueId": "0", "sysFlag": "0", "bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10), "flag": "0",
			"properties": "", "reconsumeTimes": "0", "unitMode": "false", "batch": "false",
		}, []byte("sluice check"))
		if err != nil {
			continue
		}
		if err := authError(cfg.AccessKey, addr, h); err != nil {
			return err
		}
	}
	return nil
}

// sendRefused returns the fatal ErrAuth error for a send the broker refused
// with NO_PERMISSION, nil for any other error. The client reports a
// refused send only as the text "CODE: 16, DESC: <remark>".
func sendRefused(accessKey, broker string, err error) error {
	if err == nil {
		return nil
	}
	remark, ok := strings.CutPrefix(err.Error(), "CODE: "+strconv.Itoa(resNoPermission)+", DESC: ")
	if !ok {
		return nil
	}
	return authError(accessKey, "broker "+broker, remotingHeader{Code: resNoPermission, Remark: remark})
}
