package ctl

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	fastcnpv1 "github.com/fastcnp/fastcnp/proto/fastcnp/v1"
)

// incTree is "inc tree": the INC aggregation tree.
func incTree(ctx context.Context, g *globals, args []string) error {
	fs := newFlags(g, "inc tree")
	full := fs.Bool("buckets", false, "list every bucket")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs("inc tree", pos); err != nil {
		return err
	}
	return call(ctx, g, false, func(ctx context.Context, c fastcnpv1.FastcnpClient) error {
		t, err := c.GetINCTree(ctx, &fastcnpv1.GetINCTreeRequest{})
		if err != nil {
			return err
		}
		return emit(g, t, func(w *tabwriter.Writer) { printINCTree(w, t, *full) })
	})
}

// cmdLink is "link down|up --switch S [--port P]".
func cmdLink(ctx context.Context, g *globals, args []string) error {
	if len(args) == 0 || args[0] != "down" && args[0] != "up" {
		return usageErr("link: want \"link down|up --switch S [--port P]\" (no port: the whole switch)")
	}
	verb := args[0]
	fs := newFlags(g, "link "+verb)
	sw := fs.String("switch", "", "switch name (required)")
	port := fs.Uint("port", 0, "a port of the link (its other end follows from the config); 0: the whole switch")
	pos, err := parse(fs, args[1:])
	if err != nil {
		return err
	}
	if err := noArgs("link "+verb, pos); err != nil {
		return err
	}
	if *sw == "" {
		return usageErr("--switch is required")
	}
	if *port > 511 {
		return usageErr("--port %d: want 0..511", *port)
	}
	return call(ctx, g, true, func(ctx context.Context, c fastcnpv1.FastcnpClient) error {
		t, err := c.SetLinkState(ctx, &fastcnpv1.SetLinkStateRequest{Switch: *sw, Port: uint32(*port), Down: verb == "down"})
		if err != nil {
			return err
		}
		return emit(g, t, func(w *tabwriter.Writer) {
			fmt.Fprintf(w, "%d buckets moved\n\n", t.GetBucketsMoved())
			printINCTree(w, t, false)
		})
	})
}

func printINCTree(w *tabwriter.Writer, t *fastcnpv1.INCTree, full bool) {
	if len(t.GetSwitches()) == 0 {
		fmt.Fprintln(w, "no INC group (inc.groups) is aggregated")
	}
	if len(t.GetLeaves()) > 0 {
		fmt.Fprintf(w, "leaves (rank order): %s\n", strings.Join(t.GetLeaves(), ", "))
	}
	if n := len(t.GetBuckets()); n > 0 {
		fmt.Fprintln(w, "UPPER SWITCH\tID\tWEIGHT\tBUCKETS\tSHARE")
		for _, u := range t.GetUppers() {
			fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%.1f%%\n", u.GetName(), u.GetId(), u.GetWeight(), u.GetBuckets(),
				100*float64(u.GetBuckets())/float64(n))
		}
		fmt.Fprintln(w)
	}
	if len(t.GetSwitches()) > 0 {
		fmt.Fprintln(w, "SWITCH\tGROUP\tMASK\tROOT\tCHILD PORTS (port:rank)\tUP PORTS (upper:port)")
		for _, s := range t.GetSwitches() {
			children, ups := mapPairs(s.GetChildPorts()), mapPairs(s.GetUpPorts())
			if len(s.GetGroups()) == 0 {
				fmt.Fprintf(w, "%s\t-\t-\t-\t%s\t%s\n", s.GetName(), children, ups)
			}
			for _, gr := range s.GetGroups() {
				fmt.Fprintf(w, "%s\t%d\t%#x\t%v\t%s\t%s\n", s.GetName(), gr.GetId(), gr.GetContributorsMask(), gr.GetRoot(), children, ups)
			}
		}
	}
	for _, d := range t.GetDown() {
		if d.GetPort() == 0 {
			fmt.Fprintf(w, "down: switch %s\n", d.GetSwitch())
		} else {
			fmt.Fprintf(w, "down: %s port %d\n", d.GetSwitch(), d.GetPort())
		}
	}
	for _, m := range t.GetWarnings() {
		fmt.Fprintf(w, "warning: %s\n", m)
	}
	if full && len(t.GetBuckets()) > 0 {
		fmt.Fprintln(w, "\nBUCKET\tUPPER ID")
		for i, id := range t.GetBuckets() {
			fmt.Fprintf(w, "%d\t%d\n", i, id)
		}
	}
}

// mapPairs renders a map as "k:v,k:v" in key order ("-" when empty).
func mapPairs(m map[uint32]uint32) string {
	if len(m) == 0 {
		return "-"
	}
	ks := make([]uint32, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprintf("%d:%d", k, m[k])
	}
	return strings.Join(parts, ",")
}
