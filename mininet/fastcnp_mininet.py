#!/usr/bin/python3
"""Run a fastcnp testbed topology in Mininet (p4lang/tutorials style).

Reads the same topology JSON as the Go testbed (testbed/topologies/*.json),
asks the Go runner for a plan (fastcnp-testbed -plan: switch and host
arguments, the fastcnpd configuration and the flow file), builds the
topology in Mininet with no Mininet controller (no Open vSwitch), starts one
switch per topology switch -- fastcnp-switch (default) or BMv2
simple_switch_grpc (--switch bmv2) with the simple_switch_grpc command
line -- starts fastcnpd on the switches' P4Runtime servers, runs
fastcnp-host on every host, waits for the flows, and leaves the host
statistics (JSON lines) and all logs in --out.

Needs root, Debian's Mininet for /usr/bin/python3 (make setup), and the Go
binaries (make build). For BMv2: simple_switch_grpc on PATH and the
compiled program (make p4, which needs p4c).

Link rates: fastcnp-switch shapes its ports itself (the plan gives it
--port-rate per port). BMv2 does not, so with --switch bmv2 every link is a
Mininet TCLink with the topology's rate (htb on both ends of the veth
pair); no delay is emulated (netem), as with fastcnp-switch the
topology's delay is not a link property here.

    sudo /usr/bin/python3 mininet/fastcnp_mininet.py testbed/topologies/s1-victim.json --mode fastcnp
    sudo /usr/bin/python3 mininet/fastcnp_mininet.py testbed/topologies/s2-incast-4.json --switch bmv2 --cli

Mininet's switches and fastcnpd live in the namespace this script runs in;
to keep them off the machine's own network namespace, run it inside one:
    sudo ip netns add fcnp-mn && sudo ip netns exec fcnp-mn /usr/bin/python3 mininet/fastcnp_mininet.py ...
    sudo ip netns del fcnp-mn
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def die(msg, code=2):
    sys.stderr.write("fastcnp_mininet: %s\n" % msg)
    sys.exit(code)


try:
    from mininet.net import Mininet
    from mininet.node import Switch, Host
    from mininet.link import Link, TCLink, TCIntf
    from mininet.topo import Topo
    from mininet.log import setLogLevel, info
    from mininet.cli import CLI
except ImportError:
    die("Mininet is not importable by %s: install Debian's mininet (make setup) and run this "
        "script with /usr/bin/python3 (the python3 first on PATH may be another one)" % sys.executable)


def find_binary(name, bindir):
    """Return the path of a command from --bin, bin/ or PATH, or None."""
    for d in [bindir, os.path.join(ROOT, "bin")]:
        if d and os.access(os.path.join(d, name), os.X_OK):
            return os.path.join(d, name)
    return shutil.which(name)


def ethtool_offloads_off(intf):
    """The shell command that turns off an interface's segmentation and
    receive offloads, with which libpcap sizes its ring slots at 64 KB
    (a veth has no lro or ufo; ethtool accepts the request)."""
    return "ethtool -K %s tso off gso off gro off lro off ufo off >/dev/null 2>&1" % intf


def niced(cmd, nice):
    """Prefix cmd with nice(1) for a non-zero niceness."""
    return ["nice", "-n", str(nice)] + cmd if nice else cmd


class FastcnpSwitch(Switch):
    """A P4Runtime switch process in Mininet's namespace, launched with the
    simple_switch_grpc-compatible command line. kind is 'fastcnp' (the Go
    software switch, real PFC) or 'bmv2' (simple_switch_grpc, no PFC)."""

    def __init__(self, name, plan_switch=None, binary=None, kind="fastcnp", log_dir="/tmp", nice=0, **kwargs):
        Switch.__init__(self, name, **kwargs)
        self.nice = nice
        self.plan = plan_switch
        self.binary = binary
        self.kind = kind
        self.log_dir = log_dir
        self.proc = None

    def start(self, controllers):
        ports = []
        for port, intf in sorted(self.intfs.items()):
            if intf.name == "lo" or port == 0:
                continue
            ports += ["-i", "%d@%s" % (port, intf.name)]
        grpc = "127.0.0.1:%d" % self.plan["grpc_port"]
        if self.kind == "bmv2":
            # BMv2 reads each port through libpcap's default 2 MB ring, whose
            # slots are 64 KB while the interface has segmentation or receive
            # offloads: 32 frames, and a burst of more frames than that
            # arriving while BMv2 is busy is dropped before the program sees
            # it (S4's contributions: 512 per port within milliseconds).
            # Without offloads a slot is one MTU-sized frame.
            for port, intf in sorted(self.intfs.items()):
                if intf.name != "lo" and port != 0:
                    self.cmd(ethtool_offloads_off(intf.name))
            thrift = str(9090 + int(self.plan["device_id"]))
            cmd = [self.binary, "--device-id", str(self.plan["device_id"]), "--thrift-port", thrift,
                   "--no-p4"] + ports + ["--", "--grpc-server-addr", grpc, "--cpu-port", "255",
                                        "--priority-queues", "8"]
        else:
            cmd = [self.binary, "--device-id", str(self.plan["device_id"])] + ports + \
                  ["--grpc-server-addr", grpc] + self.plan["args"]
        cmd = niced(cmd, self.nice)
        log = open(os.path.join(self.log_dir, self.name + ".log"), "w")
        info("*** %s: %s\n" % (self.name, " ".join(cmd)))
        # The switch runs in the namespace of this script (inNamespace=False),
        # where its interfaces are.
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)

    def stop_proc(self):
        """End the switch process (before Mininet deletes its links)."""
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def stop(self, deleteIntfs=True):
        self.stop_proc()
        Switch.stop(self, deleteIntfs)


def link_options(plan_link, switch_kind):
    """Mininet link options of one plan link: fastcnp-switch shapes its
    ports itself (plain veth); under BMv2 nothing would, so the link is a
    TCLink with the topology's rate in Mb/s (htb; no netem delay)."""
    if switch_kind != "bmv2":
        return {}
    mbps = float(plan_link["rate_bps"]) / 1e6
    if not 0 < mbps <= TCIntf.bwParamMax:
        raise ValueError("link %s-%s: rate %s is outside what Mininet's htb shaping accepts (0 to %d Mb/s)"
                         % (plan_link["a"], plan_link["b"], plan_link.get("rate", mbps), TCIntf.bwParamMax))
    return {"cls": TCLink, "bw": mbps}


def host_argv(binary, intf, stats, plan_host, start_at_ns):
    """fastcnp-host's command line for a plan host: the interface, the
    statistics file, the run's common start instant (--start-at, Unix ns:
    every agent starts its flows together) and the plan's arguments."""
    return [binary, "--iface", intf, "--stats", stats, "--start-at", str(int(start_at_ns))] + plan_host["args"]


class PlanTopo(Topo):
    """Hosts, switches and links of a plan; switch port numbers and MACs as
    in the Go testbed (port p of switch s has MAC 02:fc:<device>:<port>).
    switch_opts["kind"] selects the link options (link_options)."""

    def build(self, plan=None, switch_opts=None):
        for h in plan["hosts"]:
            self.addHost(h["name"], ip=None, mac=h["mac"])
        for s in plan["switches"]:
            opts = dict(switch_opts)
            opts["plan_switch"] = s
            self.addSwitch(s["name"], cls=FastcnpSwitch, dpid="%016x" % s["device_id"], **opts)
        for l in plan["links"]:
            kw = {}
            if l["a_port"]:
                kw["port1"] = l["a_port"]
                kw["addr1"] = l["a_mac"]
            else:
                kw["addr1"] = l["a_mac"]
            if l["b_port"]:
                kw["port2"] = l["b_port"]
                kw["addr2"] = l["b_mac"]
            else:
                kw["addr2"] = l["b_mac"]
            kw.update(link_options(l, switch_opts.get("kind", "fastcnp")))
            self.addLink(l["a"], l["b"], **kw)


def make_plan(args, runner, outdir):
    cmd = [runner, "-topo", args.topology, "-modes", args.mode, "-plan", outdir,
           "-target", "bmv2" if args.switch == "bmv2" else "fastcnp-switch"]
    if args.switch == "bmv2":
        cmd += ["-p4info", args.p4info, "-device-config", args.bmv2_json]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if out.returncode != 0:
        die("%s failed: %s" % (" ".join(cmd), out.stderr.strip()))
    with open(os.path.join(outdir, "plan.json")) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("topology", help="topology JSON (testbed/topologies/...)")
    ap.add_argument("--switch", choices=["fastcnp", "bmv2"], default="fastcnp",
                    help="switch target: fastcnp-switch (default) or BMv2 simple_switch_grpc")
    ap.add_argument("--mode", choices=["ecn", "fastcnp"], default="fastcnp", help="congestion-feedback mode")
    ap.add_argument("--bin", default="", help="directory with fastcnp-switch, fastcnp-host, fastcnpd, fastcnp-testbed (default bin/, then PATH)")
    ap.add_argument("--bmv2-json", default=os.environ.get("FASTCNP_BMV2_JSON", os.path.join(ROOT, "p4src/build/fastcnp.json")),
                    help="compiled BMv2 program (make p4)")
    ap.add_argument("--p4info", default=os.path.join(ROOT, "p4src/fastcnp.p4info.txtpb"), help="P4Info for BMv2")
    ap.add_argument("--out", default="", help="results folder (default results/mininet-<topology>-<mode>-<time>)")
    ap.add_argument("--cli", action="store_true", help="open the Mininet CLI instead of waiting for the flows")
    ap.add_argument("--nice", type=int, default=-10,
                    help="niceness of the switches, fastcnpd and the agents (0: unchanged), as the Go testbed")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()

    if os.geteuid() != 0:
        die("needs root (Mininet creates namespaces and veth pairs): run it with sudo")
    missing = []
    tools = {"fastcnp-host": None, "fastcnpd": None, "fastcnp-testbed": None}
    tools["fastcnp-switch" if args.switch == "fastcnp" else "simple_switch_grpc"] = None
    for t in tools:
        tools[t] = find_binary(t, args.bin)
        if tools[t] is None:
            missing.append(t)
    if missing:
        hint = "run 'make build' (and 'go build -o bin/ ./testbed/cmd/fastcnp-testbed')"
        if "simple_switch_grpc" in missing:
            hint += "; simple_switch_grpc is BMv2 with P4Runtime: see bmv2-testbed/README.md"
        die("missing: %s: %s" % (", ".join(missing), hint))
    if args.switch == "bmv2" and not os.path.isfile(args.bmv2_json):
        die("BMv2 program %s not found: run 'make p4' (needs p4c, see bmv2-testbed/README.md) "
            "or pass --bmv2-json" % args.bmv2_json)

    name = os.path.splitext(os.path.basename(args.topology))[0]
    out = args.out or os.path.join("results", "mininet-%s-%s-%s" % (name, args.mode, time.strftime("%Y%m%d-%H%M%S", time.gmtime())))
    out = os.path.abspath(out)
    os.makedirs(out, exist_ok=True)
    plan = make_plan(args, tools["fastcnp-testbed"], out)

    setLogLevel("info" if args.verbose else "warning")
    switch_opts = {"binary": tools["fastcnp-switch" if args.switch == "fastcnp" else "simple_switch_grpc"],
                   "kind": args.switch, "log_dir": out, "inNamespace": False, "nice": args.nice}
    try:
        topo = PlanTopo(plan=plan, switch_opts=switch_opts)
    except ValueError as e:
        die(str(e))
    net = Mininet(topo=topo, controller=None, link=Link,
                  autoSetMacs=False, autoStaticArp=False, build=True, waitConnected=False)
    procs = []
    mtu = int(plan.get("mtu") or 1500)
    try:
        # Jumbo frames: every interface gets the topology's MTU before the
        # switches open their ports.
        for node in net.hosts + net.switches:
            for intf in node.intfList():
                if intf.name != "lo":
                    node.cmd("ip link set dev %s mtu %d" % (intf.name, mtu))
        net.start()
        for h in net.hosts:
            intf = h.defaultIntf().name
            # The agent speaks RoCEv2 itself: no kernel address (else the
            # kernel answers RoCEv2 frames with ICMP), no IPv6 chatter.
            h.cmd("ip addr flush dev %s" % intf)
            h.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1")
        for s in net.switches:
            for intf in s.intfList():
                if intf.name != "lo":
                    s.cmd("sysctl -qw net.ipv6.conf.%s.disable_ipv6=1" % intf.name)
        time.sleep(1)
        ctl_log = open(os.path.join(out, "fastcnpd.log"), "w")
        ctl = subprocess.Popen(niced([tools["fastcnpd"], "-config", plan["controller_config"]], args.nice),
                               stdout=ctl_log, stderr=subprocess.STDOUT)
        procs.append(ctl)
        time.sleep(3)  # fastcnpd pushes the pipeline and the tables
        if ctl.poll() is not None:
            die("fastcnpd exited (status %s): see %s/fastcnpd.log" % (ctl.returncode, out), 1)
        # One start instant for all agents, as the Go testbed sets it: far
        # enough ahead that every agent is launched before it.
        start_at_ns = time.time_ns() + int((0.3 + 0.05 * len(plan["hosts"])) * 1e9)
        for hp in plan["hosts"]:
            h = net.get(hp["name"])
            argv = host_argv(tools["fastcnp-host"], h.defaultIntf().name,
                             os.path.join(out, hp["name"] + ".jsonl"), hp, start_at_ns)
            log = open(os.path.join(out, hp["name"] + ".log"), "w")
            procs.append(h.popen(niced(argv, args.nice), stdout=log, stderr=subprocess.STDOUT))
        if args.cli:
            CLI(net)
        else:
            print("fastcnp_mininet: %s, mode %s, switch %s: running the flows for %.0f s" %
                  (plan["topology"], args.mode, args.switch, plan["duration_s"]))
            time.sleep(max(0, start_at_ns / 1e9 - time.time()) + plan["duration_s"] + 0.5)
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        # Mininet deletes the links before it stops the switches: end the
        # switch processes first, or they fail on vanished interfaces.
        for sw in net.switches:
            sw.stop_proc()
        net.stop()
    print("fastcnp_mininet: host statistics (JSON lines) and logs in %s" % out)
    summarize(out, plan)


def summarize(out, plan):
    """Print each flow's receiver summary from the host statistics."""
    rows = []
    for h in plan["hosts"]:
        path = os.path.join(out, h["name"] + ".jsonl")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if r.get("type") == "summary" and r.get("role") == "receiver" and r.get("recv"):
                    rows.append((r["flow"], r["recv"]["rate_bps"] / 1e6, r["recv"]["bytes"], r["recv"]["ce"]))
    for flow, mbps, nbytes, ce in sorted(rows):
        print("  %-12s %8.1f Mb/s  %12d bytes  CE %d" % (flow, mbps, nbytes, ce))


if __name__ == "__main__":
    main()
