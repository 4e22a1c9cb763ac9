// Command fastcnp-testbed runs a testbed topology (testbed/topologies/*.json)
// on network namespaces with fastcnp-switch, fastcnpd and fastcnp-host, once
// per congestion-feedback mode, and writes a side-by-side table, CSV, JSON
// and PNG plots into an output directory. It needs root.
//
//	fastcnp-testbed -topo testbed/topologies/s1-victim.json -modes ecn,fastcnp -out results/demo
//
// Without -bin it builds the commands with `go build` into a temporary
// directory (it must run inside the fastcnp module then).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/fastcnp/fastcnp/controller/config"
	"github.com/fastcnp/fastcnp/host/cc"
	"github.com/fastcnp/fastcnp/testbed"
	"github.com/fastcnp/fastcnp/testbed/report"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "fastcnp-testbed: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	topoPath := flag.String("topo", "testbed/topologies/s1-victim.json", "topology file")
	modes := flag.String("modes", "ecn,fastcnp", "comma-separated runs, in order: a switch mode (ecn: DCQCN hosts, fastcnp: DCQCN with the fastcnp window) or a sender algorithm ("+strings.Join(cc.Names(), ", ")+"), which runs on the ports' mode it needs")
	ccParams := flag.String("cc-params", "", "fastcnp-host --cc-params for the runs named by a sender algorithm (default: the agent's)")
	hostArgs := flag.String("host-args", "", "extra fastcnp-host arguments for every host, space-separated, after the testbed's own (a flag given again overrides it, e.g. \"--cc-scale 1000 --rtt-target 11ms\")")
	out := flag.String("out", "", "output directory (default results/<topology>-<UTC timestamp>)")
	binDir := flag.String("bin", "", "directory with prebuilt fastcnp-switch, fastcnp-host and fastcnpd (default: go build)")
	duration := flag.Duration("duration", 0, "override the topology's run duration")
	params := flag.String("dcqcn-params", "", "fastcnp-host --params (DCQCN parameter set)")
	level := flag.String("log-level", "info", "log level")
	plan := flag.String("plan", "", "only write DIR/plan.json, DIR/fastcnpd.yaml and DIR/flows.json for the first of -modes (for mininet/fastcnp_mininet.py) and exit")
	target := flag.String("target", string(testbed.TargetFastcnp), "switch target of -plan: fastcnp-switch or bmv2")
	p4info := flag.String("p4info", "", "P4Info file for -plan -target bmv2 (fastcnpd pushes it)")
	devConfig := flag.String("device-config", "", "BMv2 JSON for -plan -target bmv2 (fastcnpd pushes it)")
	nice := flag.Int("nice", testbed.DefaultNice, "niceness of the switches, agents and fastcnpd (0: unchanged); the emulation runs in real time and must not wait for cores behind other work")
	replot := flag.Bool("replot", false, "do not run: read -out/result-<mode>.json of -modes and rewrite the tables and plots")
	var linkEvents linkEventFlag
	flag.Var(&linkEvents, "link", "a link event during each run (repeatable): PORT@TIME[:up][+NOTIFY], e.g. leaf2-p9@1.5s (the link of switch port leaf2-p9 goes down 1.5 s after the flows' start; fastcnpd is told at once, or NOTIFY later)")
	flag.Parse()

	log := logrus.New()
	lvl, err := logrus.ParseLevel(*level)
	if err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	log.SetLevel(lvl)
	topo, err := testbed.Load(*topoPath)
	if err != nil {
		return err
	}
	var specs []runSpec
	for _, name := range strings.Split(*modes, ",") {
		name = strings.TrimSpace(name)
		m, algo, err := testbed.RunSpec(name, cc.Names())
		if err != nil {
			return fmt.Errorf("-modes: %w", err)
		}
		specs = append(specs, runSpec{name, m, algo})
	}
	ms := make([]config.Mode, len(specs))
	for i, s := range specs {
		ms[i] = s.mode
	}
	if *plan != "" {
		pl, err := topo.WritePlan(*plan, testbed.ControllerOptions{Mode: ms[0], Target: testbed.Target(*target),
			P4Info: *p4info, DeviceConfig: *devConfig})
		if err != nil {
			return err
		}
		fmt.Printf("%s\n", filepath.Join(filepath.Dir(pl.ControllerConfig), "plan.json"))
		return nil
	}
	if *replot {
		if *out == "" {
			return errors.New("-replot needs -out")
		}
		var runs []*testbed.Result
		for _, s := range specs {
			b, err := os.ReadFile(filepath.Join(*out, "result-"+s.name+".json"))
			if err != nil {
				return fmt.Errorf("replot: %w", err)
			}
			var r testbed.Result
			if err := json.Unmarshal(b, &r); err != nil {
				return fmt.Errorf("replot: %w", err)
			}
			runs = append(runs, &r)
		}
		return writeOutputs(runs, topo, specs, *out)
	}
	if os.Geteuid() != 0 {
		return errors.New("needs root (it creates network namespaces and veth pairs); run it with sudo")
	}
	if *out == "" {
		*out = filepath.Join("results", topo.Name+"-"+time.Now().UTC().Format("20060102-150405"))
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	bins, cleanup, err := binaries(ctx, *binDir, log)
	if err != nil {
		return err
	}
	defer cleanup()
	var runs []*testbed.Result
	for _, s := range specs {
		log.WithFields(logrus.Fields{"topology": topo.Name, "mode": s.mode, "cc": s.cc}).Info("running")
		o := testbed.Options{Topology: topo, Mode: s.mode, CC: s.cc, Binaries: bins, HostArgs: strings.Fields(*hostArgs),
			WorkDir: filepath.Join(*out, s.name), Duration: *duration, DCQCNParams: *params, Nice: *nice, Log: log,
			LinkEvents: linkEvents}
		if s.cc != "" {
			o.CCParams = *ccParams
		}
		res, err := testbed.Run(ctx, o)
		if err != nil {
			return fmt.Errorf("run %s: %w", s.name, err)
		}
		runs = append(runs, res)
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return fmt.Errorf("result: %w", err)
		}
		if err := os.WriteFile(filepath.Join(*out, "result-"+s.name+".json"), b, 0o644); err != nil {
			return fmt.Errorf("result: %w", err)
		}
	}
	return writeOutputs(runs, topo, specs, *out)
}

// runSpec is one run of -modes: its name, the switch mode and the hosts'
// algorithm ("" for the mode's own DCQCN variant).
type runSpec struct {
	name string
	mode config.Mode
	cc   string
}

// writeOutputs prints the table and writes table.txt, table.md, flows.csv
// and the plots into out.
func writeOutputs(runs []*testbed.Result, topo *testbed.Topology, specs []runSpec, out string) error {
	var table bytes.Buffer
	if err := testbed.WriteTable(&table, runs); err != nil {
		return err
	}
	fmt.Print(table.String())
	fmt.Println()
	if err := testbed.WriteSummaryMarkdown(&table, runs); err != nil {
		return err
	}
	if err := testbed.WriteSummaryMarkdown(os.Stdout, runs); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "table.txt"), table.Bytes(), 0o644); err != nil {
		return fmt.Errorf("table: %w", err)
	}
	var md bytes.Buffer
	fmt.Fprintf(&md, "# %s: %s\n\n%s\n\n", topo.Name, strings.Join(runNames(specs), " vs "), topo.Description)
	if err := testbed.WriteMarkdown(&md, runs); err != nil {
		return err
	}
	md.WriteString("\n")
	if err := testbed.WriteSummaryMarkdown(&md, runs); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "table.md"), md.Bytes(), 0o644); err != nil {
		return fmt.Errorf("table: %w", err)
	}
	var csvb bytes.Buffer
	if err := testbed.WriteCSV(&csvb, runs); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "flows.csv"), csvb.Bytes(), 0o644); err != nil {
		return fmt.Errorf("csv: %w", err)
	}
	files, err := report.Plots(runs, out)
	if err != nil {
		return err
	}
	incFiles, err := writeINC(runs, topo, out)
	if err != nil {
		return err
	}
	files = append(files, incFiles...)
	fmt.Printf("\nresults in %s: table.txt table.md flows.csv result-*.json %s\n", out, strings.Join(files, " "))
	// A link that delivered more than it can carry means the measurement
	// is wrong: say so loudly and fail.
	var errs []error
	for _, r := range runs {
		if err := r.CheckPhysical(); err != nil {
			fmt.Fprintf(os.Stderr, "\nPHYSICAL CHECK FAILED: %v\n", err)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func runNames(specs []runSpec) []string {
	var s []string
	for _, r := range specs {
		s = append(s, r.name)
	}
	return s
}

// binaries returns prebuilt commands from dir, or builds them into a
// temporary directory that cleanup removes.
func binaries(ctx context.Context, dir string, log logrus.FieldLogger) (testbed.Binaries, func(), error) {
	nop := func() {}
	if dir != "" {
		b := testbed.Binaries{Switch: filepath.Join(dir, "fastcnp-switch"), Host: filepath.Join(dir, "fastcnp-host"),
			Controller: filepath.Join(dir, "fastcnpd")}
		if _, err := os.Stat(b.Controller); err != nil {
			log.Warn("no fastcnpd in " + dir + ": the controller runs in-process")
			b.Controller = ""
		}
		return b, nop, nil
	}
	root, err := testbed.ModuleRoot(ctx)
	if err != nil {
		return testbed.Binaries{}, nop, err
	}
	tmp, err := os.MkdirTemp("", "fastcnp-testbed-bin-")
	if err != nil {
		return testbed.Binaries{}, nop, fmt.Errorf("temp dir: %w", err)
	}
	cleanup := func() { os.RemoveAll(tmp) }
	b, err := testbed.BuildBinaries(ctx, root, tmp)
	if err != nil {
		if b.Switch == "" || b.Host == "" {
			cleanup()
			return b, nop, err
		}
		log.WithError(err).Warn("fastcnpd not built: the controller runs in-process")
	}
	return b, cleanup, nil
}

// writeINC writes, for a topology with INC flows, each run's INC report:
// inc-report-<label>.json, inc-<label>.md and the plot inc-<label>.png.
func writeINC(runs []*testbed.Result, topo *testbed.Topology, out string) ([]string, error) {
	hasINC := false
	for _, f := range topo.Flows {
		hasINC = hasINC || f.INC != nil
	}
	if !hasINC {
		return nil, nil
	}
	cfg, err := topo.ControllerConfig(testbed.ControllerOptions{})
	if err != nil {
		return nil, err
	}
	var files []string
	for _, r := range runs {
		rep, err := testbed.AnalyzeINC(topo, cfg, r)
		if err != nil {
			return files, err
		}
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return files, fmt.Errorf("INC report: %w", err)
		}
		name := "inc-report-" + r.Label() + ".json"
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			return files, fmt.Errorf("INC report: %w", err)
		}
		var md bytes.Buffer
		fmt.Fprintf(&md, "# %s (%s): INC\n\n%s\n\n", topo.Name, r.Label(), topo.Description)
		if err := testbed.WriteINCMarkdown(&md, rep, r); err != nil {
			return files, err
		}
		mdName := "inc-" + r.Label() + ".md"
		if err := os.WriteFile(filepath.Join(out, mdName), md.Bytes(), 0o644); err != nil {
			return files, fmt.Errorf("INC report: %w", err)
		}
		png, err := report.INCPlots(rep, r, out)
		if err != nil {
			return files, err
		}
		fmt.Print(md.String())
		files = append(files, name, mdName, png)
	}
	return files, nil
}

// linkEventFlag is -link: PORT@TIME[:up][+NOTIFY], repeatable.
type linkEventFlag []testbed.LinkEvent

func (l *linkEventFlag) String() string { return fmt.Sprint(*l) }

func (l *linkEventFlag) Set(s string) error {
	port, rest, ok := strings.Cut(s, "@")
	if !ok || port == "" {
		return fmt.Errorf("%q: want PORT@TIME[:up][+NOTIFY]", s)
	}
	ev := testbed.LinkEvent{Port: port, Down: true}
	if at, notify, ok := strings.Cut(rest, "+"); ok {
		d, err := time.ParseDuration(notify)
		if err != nil || d < 0 {
			return fmt.Errorf("%q: notify delay %q: want a duration >= 0", s, notify)
		}
		ev.NotifyAfter, rest = d, at
	}
	if at, state, ok := strings.Cut(rest, ":"); ok {
		if state != "up" && state != "down" {
			return fmt.Errorf("%q: state %q: want up or down", s, state)
		}
		ev.Down, rest = state == "down", at
	}
	d, err := time.ParseDuration(rest)
	if err != nil || d < 0 {
		return fmt.Errorf("%q: time %q: want a duration >= 0", s, rest)
	}
	ev.At = d
	*l = append(*l, ev)
	return nil
}
