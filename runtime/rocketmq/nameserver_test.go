package rocketmq

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"reflect"
	"testing"
)

// A cluster table as the 5.x name server writes it (fastjson, bare int keys).
const clusterBody = `{"brokerAddrTable":{"broker-b":{"brokerAddrs":{0:"127.0.0.1:20911",1:"127.0.0.1:20921"},"brokerName":"broker-b","cluster":"DefaultCluster","enableActingMaster":false},"broker-a":{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false},"broker-x":{"brokerAddrs":{1:"127.0.0.1:30911"},"brokerName":"broker-x","cluster":"Other"}},"clusterAddrTable":{"DefaultCluster":["broker-a","broker-b"],"Other":["broker-x"]}}`

const routeBody = `{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:20911"},"brokerName":"broker-b","cluster":"DefaultCluster"},{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"},{"brokerAddrs":{1:"127.0.0.1:30911"},"brokerName":"broker-x","cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-b","perm":6,"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":2},{"brokerName":"broker-a","perm":6,"readQueueNums":3,"topicSysFlag":0,"writeQueueNums":3},{"brokerName":"broker-x","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}`

func TestQuoteIntKeys(t *testing.T) {
	cases := map[string]string{
		`{0:"a",1:"b"}`:                   `{"0":"a","1":"b"}`,
		`{ -12 : "a" , 3 :4}`:             `{ "-12" : "a" , "3" :4}`,
		`{"k":[1,2,3],"m":{7:[8,9]}}`:     `{"k":[1,2,3],"m":{"7":[8,9]}}`,
		`{"s":"{0:\"x\",1:2}","n":{5:6}}`: `{"s":"{0:\"x\",1:2}","n":{"5":6}}`,
		`{"a\\":{1:2}}`:                   `{"a\\":{"1":2}}`,
		`[1, 2]`:                          `[1, 2]`,
	}
	for in, want := range cases {
		if got := string(quoteIntKeys([]byte(in))); got != want {
			t.Errorf("quoteIntKeys(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestDecodeClusterInfo(t *testing.T) {
	ci, err := decodeClusterInfo([]byte(clusterBody))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ci.masters("DefaultCluster"), []string{"127.0.0.1:10911", "127.0.0.1:20911"}; !reflect.DeepEqual(got, want) {
		t.Errorf("masters = %v, want %v", got, want)
	}
	if got := ci.masters("Other"); len(got) != 0 {
		t.Errorf("a cluster with only a slave has masters %v", got)
	}
	if got := ci.masters("Missing"); len(got) != 0 {
		t.Errorf("unknown cluster has masters %v", got)
	}
}

func TestRouteWriteQueues(t *testing.T) {
	r, err := decodeRoute([]byte(routeBody))
	if err != nil {
		t.Fatal(err)
	}
	want := []queue{{"broker-a", 0}, {"broker-a", 1}, {"broker-a", 2}, {"broker-b", 0}, {"broker-b", 1}}
	if got := r.writeQueues(); !reflect.DeepEqual(got, want) {
		t.Errorf("writeQueues = %v, want %v (sorted by broker, masterless broker-x left out)", got, want)
	}
	r.QueueDatas[1].Perm = 4 // read only
	if got := r.writeQueues(); len(got) != 2 {
		t.Errorf("read-only broker-a still listed: %v", got)
	}
}

func FuzzDecodeNameServerBodies(f *testing.F) {
	for _, s := range []string{clusterBody, routeBody, `{}`, `{0:`, `{"a":{-:1}}`, `{1 :{2:{3:[4,{5:6}]}}}`, `"\"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		q := quoteIntKeys(b)
		if json.Valid(b) && !bytes.Equal(q, b) {
			// Standard JSON has no bare keys: it must pass through untouched.
			t.Fatalf("valid JSON %q changed to %q", b, q)
		}
		if ci, err := decodeClusterInfo(b); err == nil {
			_ = ci.masters("DefaultCluster")
		}
		if r, err := decodeRoute(b); err == nil {
			_ = r.writeQueues()
		}
		_, _, _ = decodeFrame(b)
	})
}

// fakeNameServer answers remoting requests with canned bodies per code.
func fakeNameServer(t *testing.T, answer func(h remotingHeader) (code int, body string)) string {
	t.Helper()
	return fakeNameServerExt(t, func(h remotingHeader) (int, string, map[string]string) {
		code, body := answer(h)
		return code, body, nil
	})
}

// fakeNameServerExt is fakeNameServer with the answers' header fields.
func fakeNameServerExt(t *testing.T, answer func(h remotingHeader) (code int, body string, ext map[string]string)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var lb [4]byte
				if _, err := io.ReadFull(c, lb[:]); err != nil {
					return
				}
				buf := make([]byte, binary.BigEndian.Uint32(lb[:]))
				if _, err := io.ReadFull(c, buf); err != nil {
					return
				}
				hl := binary.BigEndian.Uint32(buf[:4]) & 0xFFFFFF
				var h remotingHeader
				if err := json.Unmarshal(buf[4:4+hl], &h); err != nil {
					return
				}
				code, body, ext := answer(h)
				// A server-initiated request first, which the client must skip.
				for _, resp := range []remotingHeader{{Code: 99, Opaque: 12345}, {Code: code, Opaque: h.Opaque, Flag: 1, Language: "JAVA", Remark: "r", ExtFields: ext}} {
					hdr, _ := json.Marshal(resp)
					b := body
					if resp.Flag == 0 {
						b = ""
					}
					frame := binary.BigEndian.AppendUint32(nil, uint32(4+len(hdr)+len(b)))
					frame = binary.BigEndian.AppendUint32(frame, uint32(len(hdr)))
					frame = append(append(frame, hdr...), b...)
					if _, err := c.Write(frame); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func TestNameServerQueries(t *testing.T) {
	addr := fakeNameServer(t, func(h remotingHeader) (int, string) {
		switch {
		case h.Code == reqGetBrokerClusterInfo:
			return 0, clusterBody
		case h.Code == reqGetRouteInfoByTopic && h.ExtFields["topic"] == "known":
			return 0, routeBody
		case h.Code == reqGetRouteInfoByTopic:
			return resTopicNotExist, ""
		}
		return 1, ""
	})
	ctx := context.Background()
	// A dead name server first: the next one must answer.
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := dead.Addr().String()
	dead.Close()
	ci, err := fetchClusterInfo(ctx, []string{deadAddr, addr})
	if err != nil {
		t.Fatal(err)
	}
	if m := ci.masters("DefaultCluster"); len(m) != 2 {
		t.Errorf("masters %v", m)
	}
	r, err := fetchRoute(ctx, []string{addr}, "known")
	if err != nil || len(r.writeQueues()) != 5 {
		t.Fatalf("route: %+v, %v", r, err)
	}
	if _, err := fetchRoute(ctx, []string{addr}, "unknown"); !errors.Is(err, errTopicNotExist) {
		t.Errorf("unknown topic: err = %v", err)
	}
	if _, err := fetchClusterInfo(ctx, []string{deadAddr}); err == nil {
		t.Error("no name server up: no error")
	}
}
