package rocketmq

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"sync/atomic"
	"time"
)

// A minimal client of RocketMQ's remoting protocol (JSON headers), for the two
// name-server queries the Go client does not expose: the cluster table (to
// find the brokers to create topics on) and a topic's route (its queues).

const (
	reqGetRouteInfoByTopic  = 105
	reqGetBrokerClusterInfo = 106
	resSuccess              = 0
	resTopicNotExist        = 17
	maxFrame                = 16 << 20
	remotingTimeout         = 5 * time.Second
	permWrite               = 2
)

var opaqueSeq atomic.Int32

type remotingHeader struct {
	Code      int               `json:"code"`
	Language  string            `json:"language"`
	Version   int               `json:"version"`
	Opaque    int32             `json:"opaque"`
	Flag      int               `json:"flag"`
	Remark    string            `json:"remark"`
	ExtFields map[string]string `json:"extFields"`
}

// errTopicNotExist is returned by routeOf when the name server knows no route.
var errTopicNotExist = errors.New("rocketmq: topic does not exist")

// invoke sends one request to addr and returns the response header and body.
func invoke(ctx context.Context, addr string, code int, ext map[string]string) (remotingHeader, []byte, error) {
	return invokeBody(ctx, addr, code, ext, nil)
}

// invokeBody is invoke with a request body, on a connection of its own.
func invokeBody(ctx context.Context, addr string, code int, ext map[string]string, body []byte) (remotingHeader, []byte, error) {
	conn, err := dialRemoting(ctx, addr)
	if err != nil {
		return remotingHeader{}, nil, err
	}
	defer conn.Close()
	return roundTrip(ctx, conn, addr, code, ext, body)
}

// dialRemoting connects to addr.
func dialRemoting(ctx context.Context, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: remotingTimeout}
	return d.DialContext(ctx, "tcp", addr)
}

// roundTrip sends one request on conn (to addr) and reads frames until its
// response, within remotingTimeout or ctx. It leaves no deadline on conn
// when it succeeds while ctx is not done, so that conn may serve another
// request.
func roundTrip(ctx context.Context, conn net.Conn, addr string, code int, ext map[string]string, body []byte) (remotingHeader, []byte, error) {
	var zero remotingHeader
	deadline := time.Now().Add(remotingTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	req := remotingHeader{Code: code, Language: "GO", Version: 317, Opaque: opaqueSeq.Add(1), ExtFields: ext}
	if req.ExtFields == nil {
		req.ExtFields = map[string]string{}
	}
	hdr, err := json.Marshal(req)
	if err != nil {
		return zero, nil, err
	}
	frame := make([]byte, 8, 8+len(hdr)+len(body))
	binary.BigEndian.PutUint32(frame[0:4], uint32(4+len(hdr)+len(body)))
	binary.BigEndian.PutUint32(frame[4:8], uint32(len(hdr))) // serialize type 0 (JSON) in the top byte
	frame = append(frame, hdr...)
	frame = append(frame, body...)
	if _, err := conn.Write(frame); err != nil {
		return zero, nil, err
	}
	for {
		var lenBuf [4]byte
		if _, err := io.ReadFull(conn, lenBuf[:]); err != nil {
			return zero, nil, err
		}
		n := binary.BigEndian.Uint32(lenBuf[:])
		if n < 4 || n > maxFrame {
			return zero, nil, fmt.Errorf("rocketmq: bad frame length %d from %s", n, addr)
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(conn, buf); err != nil {
			return zero, nil, err
		}
		resp, body, err := decodeFrame(buf)
		if err != nil {
			return zero, nil, fmt.Errorf("rocketmq: response from %s: %w", addr, err)
		}
		if resp.Flag&1 == 1 && resp.Opaque == req.Opaque {
			if stop() { // else ctx is done, and conn's deadline broken
				_ = conn.SetDeadline(time.Time{})
			}
			return resp, body, nil
		}
		// Not our response (a server-initiated request): keep reading.
	}
}

// decodeFrame splits a frame (without its length prefix) into header and body.
func decodeFrame(buf []byte) (remotingHeader, []byte, error) {
	var h remotingHeader
	if len(buf) < 4 {
		return h, nil, errors.New("short frame")
	}
	mark := binary.BigEndian.Uint32(buf[:4])
	if typ := mark >> 24; typ != 0 {
		return h, nil, fmt.Errorf("unsupported serialize type %d", typ)
	}
	hl := int(mark & 0xFFFFFF)
	if hl > len(buf)-4 {
		return h, nil, fmt.Errorf("header length %d beyond frame of %d", hl, len(buf))
	}
	var raw struct {
		Code   int             `json:"code"`
		Opaque int32           `json:"opaque"`
		Flag   int             `json:"flag"`
		Remark string          `json:"remark"`
		Ext    json.RawMessage `json:"extFields"`
	}
	if err := json.Unmarshal(buf[4:4+hl], &raw); err != nil {
		return h, nil, fmt.Errorf("header: %w", err)
	}
	h = remotingHeader{Code: raw.Code, Opaque: raw.Opaque, Flag: raw.Flag, Remark: raw.Remark}
	if len(raw.Ext) > 0 {
		_ = json.Unmarshal(raw.Ext, &h.ExtFields) // best effort: only some answers carry fields
	}
	return h, buf[4+hl:], nil
}

// quoteIntKeys makes the name server's fastjson output standard JSON: it
// writes maps keyed by integers with bare keys ({0:"127.0.0.1:10911"}).
func quoteIntKeys(in []byte) []byte {
	var out bytes.Buffer
	out.Grow(len(in) + 16)
	inStr, esc := false, false
	var prev byte // last significant byte outside strings
	for i := 0; i < len(in); i++ {
		c := in[i]
		if inStr {
			out.WriteByte(c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
				prev = '"'
			}
			continue
		}
		if (prev == '{' || prev == ',') && (c == '-' || c >= '0' && c <= '9') {
			j := i + 1
			for j < len(in) && in[j] >= '0' && in[j] <= '9' {
				j++
			}
			k := j
			for k < len(in) && (in[k] == ' ' || in[k] == '\t' || in[k] == '\n' || in[k] == '\r') {
				k++
			}
			if k < len(in) && in[k] == ':' {
				out.WriteByte('"')
				out.Write(in[i:j])
				out.WriteByte('"')
				i = j - 1
				prev = '"'
				continue
			}
		}
		out.WriteByte(c)
		switch c {
		case ' ', '\t', '\n', '\r':
		case '"':
			inStr = true
		default:
			prev = c
		}
	}
	return out.Bytes()
}

type brokerData struct {
	Cluster     string            `json:"cluster"`
	BrokerName  string            `json:"brokerName"`
	BrokerAddrs map[string]string `json:"brokerAddrs"`
}

type clusterInfo struct {
	BrokerAddrTable  map[string]brokerData `json:"brokerAddrTable"`
	ClusterAddrTable map[string][]string   `json:"clusterAddrTable"`
}

// decodeClusterInfo parses a GET_BROKER_CLUSTER_INFO body.
func decodeClusterInfo(body []byte) (clusterInfo, error) {
	var ci clusterInfo
	if err := json.Unmarshal(quoteIntKeys(body), &ci); err != nil {
		return ci, fmt.Errorf("rocketmq: cannot decode cluster info: %w", err)
	}
	return ci, nil
}

// masters returns the master address (broker id 0) of every broker of cluster.
func (ci clusterInfo) masters(cluster string) []string {
	var out []string
	for _, name := range ci.ClusterAddrTable[cluster] {
		if a := ci.BrokerAddrTable[name].BrokerAddrs["0"]; a != "" {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}

type queueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int    `json:"readQueueNums"`
	WriteQueueNums int    `json:"writeQueueNums"`
	Perm           int    `json:"perm"`
}

type topicRoute struct {
	QueueDatas  []queueData  `json:"queueDatas"`
	BrokerDatas []brokerData `json:"brokerDatas"`
}

// decodeRoute parses a GET_ROUTEINFO_BY_TOPIC body.
func decodeRoute(body []byte) (topicRoute, error) {
	var r topicRoute
	if err := json.Unmarshal(quoteIntKeys(body), &r); err != nil {
		return r, fmt.Errorf("rocketmq: cannot decode topic route: %w", err)
	}
	return r, nil
}

// queue is one writable queue of a topic, as the Go client lists them.
type queue struct {
	Broker string
	ID     int
}

// writeQueues lists the writable queues the way the Go client does (brokers
// sorted by name, each with queue ids 0..WriteQueueNums-1), so that a queue
// chosen here is found among the client's queues.
func (r topicRoute) writeQueues() []queue {
	qds := append([]queueData(nil), r.QueueDatas...)
	sort.SliceStable(qds, func(i, j int) bool { return qds[i].BrokerName < qds[j].BrokerName })
	var out []queue
	for _, qd := range qds {
		if qd.Perm&permWrite == 0 {
			continue
		}
		hasMaster := false
		for _, bd := range r.BrokerDatas {
			if bd.BrokerName == qd.BrokerName && bd.BrokerAddrs["0"] != "" {
				hasMaster = true
			}
		}
		if !hasMaster {
			continue
		}
		for i := 0; i < qd.WriteQueueNums && i < 1<<16; i++ {
			out = append(out, queue{Broker: qd.BrokerName, ID: i})
		}
	}
	return out
}

// queryNameServers runs one request against each name server in turn until
// one answers.
func queryNameServers(ctx context.Context, addrs []string, code int, ext map[string]string) (remotingHeader, []byte, error) {
	var errs []error
	for _, a := range addrs {
		h, body, err := invoke(ctx, a, code, ext)
		if err == nil {
			return h, body, nil
		}
		errs = append(errs, fmt.Errorf("name server %s: %w", a, err))
		if ctx.Err() != nil {
			break
		}
	}
	return remotingHeader{}, nil, errors.Join(errs...)
}

// fetchClusterInfo asks the name servers for the cluster table.
func fetchClusterInfo(ctx context.Context, addrs []string) (clusterInfo, error) {
	h, body, err := queryNameServers(ctx, addrs, reqGetBrokerClusterInfo, nil)
	if err != nil {
		return clusterInfo{}, fmt.Errorf("rocketmq: cannot read the cluster table (is the name server up?): %w", err)
	}
	if h.Code != resSuccess {
		return clusterInfo{}, fmt.Errorf("rocketmq: cluster table: code %d: %s", h.Code, h.Remark)
	}
	return decodeClusterInfo(body)
}

// fetchRoute asks the name servers for a topic's route; errTopicNotExist when
// there is none.
func fetchRoute(ctx context.Context, addrs []string, topic string) (topicRoute, error) {
	h, body, err := queryNameServers(ctx, addrs, reqGetRouteInfoByTopic, map[string]string{"topic": topic})
	if err != nil {
		return topicRoute{}, fmt.Errorf("rocketmq: cannot read the route of topic %q: %w", topic, err)
	}
	switch h.Code {
	case resSuccess:
		return decodeRoute(body)
	case resTopicNotExist:
		return topicRoute{}, errTopicNotExist
	}
	return topicRoute{}, fmt.Errorf("rocketmq: route of topic %q: code %d: %s", topic, h.Code, h.Remark)
}

// The name servers' KV store (PUT_KV_CONFIG / GET_KV_CONFIG), kept on each
// name server's disk (kvConfig.json). Its namespace ORDER_TOPIC_CONFIG holds
// RocketMQ's own per-topic queue layouts of ordered topics
// ("broker-a:4;broker-b:4"; mqadmin updateOrderConf reads and writes them):
// where the publisher records each topic's queue set (queueSet).
const (
	reqPutKVConfig      = 100
	reqGetKVConfig      = 101
	resQueryNotFound    = 22
	orderConfNamespace  = "ORDER_TOPIC_CONFIG"
	orderConfAdminUsage = "mqadmin updateOrderConf -n <name server> -t %s -m %s"
)

// errNoOrderConf is returned by fetchOrderConf when every name server
// answered that it has none for the topic.
var errNoOrderConf = errors.New("rocketmq: no queue set recorded")

// fetchOrderConf reads topic's ORDER_TOPIC_CONFIG value from the name
// servers: the first one found, with the name servers that answered that
// they have none (missing). errNoOrderConf when every one answered so; an
// error when none has it and one did not answer (a recorded value may be
// there).
func fetchOrderConf(ctx context.Context, addrs []string, topic string) (conf string, missing []string, err error) {
	var errs []error
	for _, a := range addrs {
		h, _, err := invoke(ctx, a, reqGetKVConfig, map[string]string{"namespace": orderConfNamespace, "key": topic})
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("name server %s: %w", a, err))
		case h.Code == resSuccess && h.ExtFields["value"] != "":
			if conf == "" {
				conf = h.ExtFields["value"]
			}
		case h.Code == resQueryNotFound || h.Code == resSuccess:
			missing = append(missing, a)
		default:
			errs = append(errs, fmt.Errorf("name server %s: code %d: %s", a, h.Code, h.Remark))
		}
		if ctx.Err() != nil {
			return "", nil, ctx.Err()
		}
	}
	if conf != "" {
		return conf, missing, nil
	}
	if len(errs) > 0 {
		return "", nil, fmt.Errorf("rocketmq: cannot read the recorded queue set of topic %q: %w", topic, errors.Join(errs...))
	}
	return "", missing, errNoOrderConf
}

// putOrderConf writes topic's ORDER_TOPIC_CONFIG value on name servers
// addrs.
func putOrderConf(ctx context.Context, addrs []string, topic, conf string) error {
	var errs []error
	for _, a := range addrs {
		h, _, err := invoke(ctx, a, reqPutKVConfig, map[string]string{"namespace": orderConfNamespace, "key": topic, "value": conf})
		if err == nil && h.Code != resSuccess {
			err = fmt.Errorf("code %d: %s", h.Code, h.Remark)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("name server %s: %w", a, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("rocketmq: cannot record the queue set of topic %q: %w", topic, errors.Join(errs...))
	}
	return nil
}
