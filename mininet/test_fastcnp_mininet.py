#!/usr/bin/python3
"""Unit tests of fastcnp_mininet.py that need neither root nor BMv2: the
Mininet topology object is built for both switch kinds, never started.

    /usr/bin/python3 -m unittest -v test_fastcnp_mininet     (in mininet/)

FASTCNP_PLAN names a plan.json written by fastcnp-testbed -plan (the Go test
testbed.TestMininetTopology writes one for s1-victim); without it a small
built-in plan is used. Skipped when Mininet is not importable.
"""

import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

try:
    import mininet.net  # noqa: F401 (availability check only)
    HAVE_MININET = True
except ImportError:
    HAVE_MININET = False

SMALL_PLAN = {
    "topology": "two-hosts", "mode": "fastcnp", "target": "fastcnp-switch", "duration_s": 1, "mtu": 9000,
    "switches": [{"name": "s1", "device_id": 1, "grpc_port": 50001, "args": ["--port-rate", "1=100Mb/s"]}],
    "hosts": [{"name": "h1", "ip": "10.0.0.1", "mac": "02:00:00:00:00:01", "args": ["--ip", "10.0.0.1"]},
              {"name": "h2", "ip": "10.0.0.2", "mac": "02:00:00:00:00:02", "args": ["--ip", "10.0.0.2"]}],
    "links": [{"a": "h1", "a_port": 0, "a_mac": "02:00:00:00:00:01", "b": "s1", "b_port": 1,
               "b_mac": "02:fc:00:01:00:01", "rate": "100Mb/s", "rate_bps": 100e6},
              {"a": "h2", "a_port": 0, "a_mac": "02:00:00:00:00:02", "b": "s1", "b_port": 2,
               "b_mac": "02:fc:00:01:00:02", "rate": "250Mb/s", "rate_bps": 250e6}],
}


def load_plan():
    path = os.environ.get("FASTCNP_PLAN")
    if not path:
        return SMALL_PLAN
    with open(path) as f:
        return json.load(f)


@unittest.skipUnless(HAVE_MININET, "Mininet is not importable by %s" % sys.executable)
class TopologyTest(unittest.TestCase):
    def setUp(self):
        import fastcnp_mininet
        self.m = fastcnp_mininet
        self.plan = load_plan()

    def topo(self, kind):
        opts = {"binary": "/nonexistent/" + kind, "kind": kind, "log_dir": "/tmp", "inNamespace": False, "nice": 0}
        return self.m.PlanTopo(plan=self.plan, switch_opts=opts)

    def links(self, topo):
        """(a, b) -> link options, in plan order."""
        return {(a, b): info for a, b, info in topo.links(sort=False, withInfo=True)}

    def test_bmv2_links_are_shaped_at_the_topology_rate(self):
        links = self.links(self.topo("bmv2"))
        self.assertEqual(len(links), len(self.plan["links"]))
        for pl in self.plan["links"]:
            info = links[(pl["a"], pl["b"])]
            self.assertIs(info.get("cls"), self.m.TCLink, pl)
            self.assertAlmostEqual(info.get("bw"), pl["rate_bps"] / 1e6, places=9)
            self.assertNotIn("delay", info)  # no netem on this kernel
            # Ports and MACs as in the Go testbed.
            if pl["b_port"]:
                self.assertEqual(info.get("port2"), pl["b_port"])
            self.assertEqual(info.get("addr2"), pl["b_mac"])

    def test_fastcnp_switch_links_are_plain(self):
        links = self.links(self.topo("fastcnp"))
        self.assertEqual(len(links), len(self.plan["links"]))
        for pl in self.plan["links"]:
            info = links[(pl["a"], pl["b"])]
            self.assertNotIn("cls", info, pl)  # Mininet's default Link: the switch shapes
            self.assertNotIn("bw", info, pl)

    def test_nodes(self):
        topo = self.topo("bmv2")
        self.assertEqual(sorted(topo.hosts()), sorted(h["name"] for h in self.plan["hosts"]))
        self.assertEqual(sorted(topo.switches()), sorted(s["name"] for s in self.plan["switches"]))

    def test_rate_outside_htb_range_is_an_error(self):
        bad = dict(self.plan["links"][0], rate="10Gb/s", rate_bps=10e9)
        with self.assertRaises(ValueError) as cm:
            self.m.link_options(bad, "bmv2")
        self.assertIn("10Gb/s", str(cm.exception))
        self.assertEqual(self.m.link_options(bad, "fastcnp"), {})

    def test_host_argv_has_the_common_start(self):
        hp = self.plan["hosts"][0]
        argv = self.m.host_argv("/bin/fastcnp-host", "h1-eth0", "/tmp/h1.jsonl", hp, 1795000000123456789)
        self.assertEqual(argv[:7], ["/bin/fastcnp-host", "--iface", "h1-eth0", "--stats", "/tmp/h1.jsonl",
                                    "--start-at", "1795000000123456789"])
        self.assertEqual(argv[7:], hp["args"])


if __name__ == "__main__":
    unittest.main()
