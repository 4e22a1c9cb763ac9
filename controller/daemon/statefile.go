package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/controller/fabric"
)

// stateVersion is the state file format version.
const stateVersion = 1

// fileState is the dynamic part of the desired state, kept across restarts.
type fileState struct {
	Version     int              `json:"version"`
	Connections []fileConnection `json:"connections"`
	// Ports are the port settings changed through the API, by switch then
	// port number; they override the config file.
	Ports map[string]map[uint16]PortOverride `json:"ports,omitempty"`
	// LogGeneration is the generation of this snapshot: the log next to
	// it (persist.go) continues it when its header names the same one.
	LogGeneration uint64 `json:"log_generation,omitempty"`
	// WriterElection is the election ID (high, low) the snapshot's writer
	// held on each switch it was primary of: an instance outranked on a
	// switch by the file's writer does not write the file (persist.go,
	// supplantedLocked).
	WriterElection map[string][2]uint64 `json:"writer_election,omitempty"`
	// INC holds the links and switches the INC tree avoids (SetLinkState,
	// inc.go): a restarted fastcnpd, or the next HA leader, keeps avoiding them.
	INC *fileINC `json:"inc,omitempty"`
}

// fileINC is the failures of the INC tree told through the API.
type fileINC struct {
	DownSwitches []string      `json:"down_switches,omitempty"`
	DownLinks    []fileLinkEnd `json:"down_links,omitempty"`
}

// fileLinkEnd is one end of a link marked down: the end named in the call.
type fileLinkEnd struct {
	Switch string `json:"switch"`
	Port   uint16 `json:"port"`
}

type fileConnection struct {
	SenderIP    string    `json:"sender_ip"`
	UDPSrcPort  uint16    `json:"udp_src_port"`
	ReceiverQPN uint32    `json:"receiver_qpn"`
	ReceiverIP  string    `json:"receiver_ip,omitempty"`
	SenderQPN   uint32    `json:"sender_qpn"`
	Flags       uint8     `json:"flags"`
	WorkerRank  uint8     `json:"worker_rank"`
	INCGroup    uint16    `json:"inc_group"`
	Index       uint16    `json:"conn_index"`
	Source      string    `json:"source"`
	Static      bool      `json:"static,omitempty"`
	LastSeen    time.Time `json:"last_seen"`
	// IngressSwitch and IngressPort: where the last announcement came in
	// (the port whose quota the connection counts against); absent for
	// API connections and in files written before quotas existed.
	IngressSwitch string `json:"ingress_switch,omitempty"`
	IngressPort   uint16 `json:"ingress_port,omitempty"`
	// OwnerKey and OwnerMAC: the announcement key and the Ethernet source
	// of the host that owns the connection (fabric.Owner); absent for API
	// connections and in files written before owners existed.
	OwnerKey uint32 `json:"owner_key,omitempty"`
	OwnerMAC string `json:"owner_mac,omitempty"`
}

// PortOverride holds port settings changed at run time (nil = unchanged).
type PortOverride struct {
	QthBytes     *uint64  `json:"qth_bytes,omitempty"`
	TcheckNs     *uint64  `json:"tcheck_ns,omitempty"`
	CNPGapNs     *uint64  `json:"cnp_gap_ns,omitempty"`
	Mode         *string  `json:"mode,omitempty"`
	REDKminBytes *uint64  `json:"red_kmin_bytes,omitempty"`
	REDKmaxBytes *uint64  `json:"red_kmax_bytes,omitempty"`
	REDPmax      *float64 `json:"red_pmax,omitempty"`
}

func toFile(c fabric.Connection) fileConnection {
	fc := fileConnection{SenderIP: c.SenderIP.String(), UDPSrcPort: c.UDPSrcPort, ReceiverQPN: c.ReceiverQPN,
		SenderQPN: c.SenderQPN, Flags: c.Flags, WorkerRank: c.WorkerRank, INCGroup: c.INCGroup, Index: c.Index,
		Source: c.Source, Static: c.Static, LastSeen: c.LastSeen.UTC(),
		IngressSwitch: c.Ingress.Switch, IngressPort: c.Ingress.Port, OwnerKey: c.Owner.Key}
	if c.ReceiverIP.IsValid() {
		fc.ReceiverIP = c.ReceiverIP.String()
	}
	if c.Owner.MAC != ([6]byte{}) {
		fc.OwnerMAC = net.HardwareAddr(c.Owner.MAC[:]).String()
	}
	return fc
}

func fromFile(fc fileConnection) (fabric.Connection, error) {
	ip, err := netip.ParseAddr(fc.SenderIP)
	if err != nil {
		return fabric.Connection{}, fmt.Errorf("sender_ip: %w", err)
	}
	c := fabric.Connection{ConnKey: fabric.ConnKey{SenderIP: ip, UDPSrcPort: fc.UDPSrcPort, ReceiverQPN: fc.ReceiverQPN},
		SenderQPN: fc.SenderQPN, Flags: fc.Flags, WorkerRank: fc.WorkerRank, INCGroup: fc.INCGroup, Index: fc.Index,
		Source: fc.Source, Static: fc.Static, LastSeen: fc.LastSeen,
		Ingress: fabric.PortRef{Switch: fc.IngressSwitch, Port: fc.IngressPort}, Owner: fabric.Owner{Key: fc.OwnerKey}}
	if fc.ReceiverIP != "" {
		if c.ReceiverIP, err = netip.ParseAddr(fc.ReceiverIP); err != nil {
			return c, fmt.Errorf("receiver_ip: %w", err)
		}
	}
	if fc.OwnerMAC != "" {
		mac, err := net.ParseMAC(fc.OwnerMAC)
		if err != nil || len(mac) != 6 {
			return c, fmt.Errorf("owner_mac %q: not an Ethernet address", fc.OwnerMAC)
		}
		copy(c.Owner.MAC[:], mac)
	}
	return c, nil
}

// loadStateFile reads the state file; a missing file is an empty state.
func loadStateFile(path string) (*fileState, error) {
	data, err := config.ReadFileLimited(path, "state file", MaxStateFileSize) // limits.go
	if errors.Is(err, os.ErrNotExist) {
		return &fileState{Version: stateVersion}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state file: %w", err)
	}
	var fs fileState
	if err := json.Unmarshal(data, &fs); err != nil {
		return nil, fmt.Errorf("state file %s: %w", path, err)
	}
	if fs.Version != stateVersion {
		return nil, fmt.Errorf("state file %s: version %d, want %d", path, fs.Version, stateVersion)
	}
	return &fs, nil
}

// checkStateDir makes sure the state file can be written: its directory
// exists (it is created like writeFileAtomic does) and takes a new file.
// fastcnpd checks at start rather than failing at the first change, when
// an announcement or an API call could no longer be saved.
func checkStateDir(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("state file %s: cannot create its directory: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".probe*")
	if err != nil {
		return fmt.Errorf("state file %s: directory %s is not writable: %w", path, dir, err)
	}
	name := f.Name()
	_, werr := f.Write([]byte("probe\n"))
	cerr := f.Close()
	rerr := os.Remove(name)
	if err := errors.Join(werr, cerr, rerr); err != nil {
		return fmt.Errorf("state file %s: directory %s is not writable: %w", path, dir, err)
	}
	return nil
}

// writeFileAtomic writes data to path so that a crash leaves either the old
// or the new file: write a temporary file in the same directory, fsync it,
// rename it over path, fsync the directory.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("state file: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("state file: fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("state file: close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("state file: rename: %w", err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

func saveStateFile(path string, fs *fileState) error {
	data, err := json.MarshalIndent(fs, "", "  ")
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	return writeFileAtomic(path, append(data, '\n'))
}
