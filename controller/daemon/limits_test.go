package daemon

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/fastcnp/fastcnp/controller/config"
	fastcnpv1 "github.com/fastcnp/fastcnp/proto/fastcnp/v1"
)

// fakeClock moves only when a test advances it.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// limitsAPI serves the API of a daemon without switches (ValidateConfig
// needs none) on the fake clock, and returns a client.
func limitsAPI(t *testing.T, auth config.Auth, clk *fakeClock) fastcnpv1.FastcnpClient {
	t.Helper()
	s, err := NewGRPCServer(&Daemon{opts: Options{Now: clk.Now}}, auth)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); s.Stop(); <-done })
	return fastcnpv1.NewFastcnpClient(conn)
}

const smallConfig = "api:\n  auth: {insecure: true}\nswitches:\n  - {name: s1, address: '127.0.0.1:9559', device_id: 1, tls: {insecure: true}}\n"

// TestValidateConfigTooLarge: a config beyond the 4 MiB limit is refused
// with INVALID_ARGUMENT naming the limit (it used to fail in gRPC with an
// opaque RESOURCE_EXHAUSTED, the server's default 4 MiB message limit),
// and a request beyond the server's message limit with RESOURCE_EXHAUSTED.
func TestValidateConfigTooLarge(t *testing.T) {
	c := limitsAPI(t, config.Auth{Insecure: true}, &fakeClock{t: time.Unix(1e9, 0)})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := c.ValidateConfig(ctx, &fastcnpv1.ValidateConfigRequest{Name: "big.yaml", Config: make([]byte, 4<<20+1)})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "limit of 4 MiB") {
		t.Errorf("4 MiB + 1: %v; want InvalidArgument naming the limit of 4 MiB", err)
	}
	_, err = c.ValidateConfig(ctx, &fastcnpv1.ValidateConfigRequest{Name: "huge.yaml", Config: make([]byte, 8<<20)})
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("8 MiB: %v; want ResourceExhausted", err)
	}
	res, err := c.ValidateConfig(ctx, &fastcnpv1.ValidateConfigRequest{Name: "ok.yaml", Config: []byte(smallConfig)})
	if err != nil || !res.GetValid() {
		t.Errorf("small config: %v %v; want valid", res, err)
	}
}

// TestValidateConfigRateLimited: each caller (token) gets a burst of
// ValidateConfig calls, then RESOURCE_EXHAUSTED until its bucket refills;
// another token is not affected, and an unknown token is still
// UNAUTHENTICATED. Fake clock, no sleeps.
func TestValidateConfigRateLimited(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens")
	const tokA, tokB = "read-token-aaaaaaaaaaaaaaaa", "read-token-bbbbbbbbbbbbbbbb"
	if err := os.WriteFile(path, []byte("read "+tokA+"\nread "+tokB+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	c := limitsAPI(t, config.Auth{TokenFile: path}, clk)
	call := func(tok string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
		_, err := c.ValidateConfig(ctx, &fastcnpv1.ValidateConfigRequest{Config: []byte(smallConfig)})
		return err
	}
	const burst = 5
	for i := 0; i < burst; i++ {
		if err := call(tokA); err != nil {
			t.Fatalf("call %d of the burst: %v", i+1, err)
		}
	}
	err := call(tokA)
	if st := status.Convert(err); st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "rate limit") {
		t.Fatalf("call %d: %v; want ResourceExhausted (rate limit)", burst+1, err)
	}
	if err := call(tokB); err != nil {
		t.Errorf("another token: %v; want its own burst", err)
	}
	if code := status.Code(call("unknown-token-cccccccccccc")); code != codes.Unauthenticated {
		t.Errorf("unknown token: %v; want Unauthenticated", code)
	}
	clk.Advance(1999 * time.Millisecond)
	if code := status.Code(call(tokA)); code != codes.ResourceExhausted {
		t.Errorf("after 1.999 s: %v; want still ResourceExhausted", code)
	}
	clk.Advance(time.Millisecond)
	if err := call(tokA); err != nil {
		t.Errorf("after 2 s: %v; want one more call", err)
	}
	if code := status.Code(call(tokA)); code != codes.ResourceExhausted {
		t.Errorf("right after: %v; want ResourceExhausted", code)
	}
}

// TestValidateConfigAnswerBounded: a config with 20,000 bad fields gets
// an answer with the first 100 errors and a count of the rest, and a huge
// value quoted in an error is cut: the answer stays small.
func TestValidateConfigAnswerBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(smallConfig)
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&b, "x%d: 1\n", i)
	}
	res := ValidateConfig("many.yaml", []byte(b.String()))
	if len(res.Errors) != 101 || res.Valid {
		t.Fatalf("%d errors, valid %v; want 100 + 1 line for the rest", len(res.Errors), res.Valid)
	}
	if want := "many.yaml: ... and 19900 more errors (only the first 100 are reported)"; res.Errors[100] != want {
		t.Errorf("last error %q; want %q", res.Errors[100], want)
	}
	if n := proto.Size(res); n > 128<<10 {
		t.Errorf("answer of %d bytes; want at most 128 KiB", n)
	}
	long := smallConfig + "metrics: {listen: '" + strings.Repeat("a", 1<<20) + "'}\n"
	res = ValidateConfig("long.yaml", []byte(long))
	if n := proto.Size(res); res.Valid || n > 128<<10 {
		t.Errorf("huge value: answer of %d bytes, valid %v; want invalid and at most 128 KiB", n, res.Valid)
	}
}

// TestStateFileLimit: the largest legitimate state file (every connection
// of the table with long fields, and every setting overridden on every
// port of MaxSwitches switches) fits MaxStateFileSize with a 1.5x margin;
// a larger file, or one that never ends, is refused naming the limit.
func TestStateFileLimit(t *testing.T) {
	dir := t.TempDir()
	fs := fileState{Version: stateVersion, Ports: map[string]map[uint16]PortOverride{}}
	u, f, m := uint64(1<<63), 0.123456789, "fastcnp"
	for i := 0; i < 4096; i++ {
		fs.Connections = append(fs.Connections, fileConnection{SenderIP: "fd00:1234:5678:9abc:def0:1234:5678:9abc",
			ReceiverIP: "fd00:1234:5678:9abc:def0:1234:5678:9abd", UDPSrcPort: 65535, ReceiverQPN: 1<<24 - 1, SenderQPN: 1<<24 - 1,
			Flags: 255, WorkerRank: 255, INCGroup: 65535, Index: 4095, Source: "announce", Static: true,
			LastSeen:      time.Date(2026, 11, 26, 13, 0, 0, 123456789, time.FixedZone("x", 3600)),
			IngressSwitch: strings.Repeat("s", 32), IngressPort: 511})
	}
	// One switch with every port overridden; the others weigh the same.
	ports := map[uint16]PortOverride{}
	for p := uint16(1); p <= config.MaxPort; p++ {
		ports[p] = PortOverride{QthBytes: &u, TcheckNs: &u, CNPGapNs: &u, Mode: &m, REDKminBytes: &u, REDKmaxBytes: &u, REDPmax: &f}
	}
	fs.Ports[strings.Repeat("s", 32)] = ports
	path := filepath.Join(dir, "state.json")
	if err := saveStateFile(path, &fs); err != nil {
		t.Fatal(err)
	}
	if _, err := loadStateFile(path); err != nil {
		t.Fatalf("state file refused: %v", err)
	}
	one, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	fs.Ports = nil
	if err := saveStateFile(path, &fs); err != nil {
		t.Fatal(err)
	}
	conns, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	largest := conns.Size() + config.MaxSwitches*(one.Size()-conns.Size())
	t.Logf("largest state file: %d bytes (connections %d; limit %d)", largest, conns.Size(), MaxStateFileSize)
	if largest > MaxStateFileSize*2/3 {
		t.Errorf("largest state file of %d bytes leaves less than a 1.5x margin to %d", largest, MaxStateFileSize)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, MaxStateFileSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadStateFile(big); err == nil || !strings.Contains(err.Error(), "larger than the limit of 64 MiB") || !strings.Contains(err.Error(), big) {
		t.Errorf("state file of 64 MiB + 1: %v; want the size limit", err)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := loadStateFile("/dev/zero"); err == nil || !strings.Contains(err.Error(), "limit of 64 MiB") {
			t.Errorf("state file /dev/zero: %v; want the size limit", err)
		}
	}
}
