// SPDX-License-Identifier: Apache-2.0
// Minimal OTLP/gRPC profiles receiver for bench/torch.sh: decodes what the OpenTelemetry
// eBPF profiler sends and writes one line per sample event, for the script to count.
//
// Usage: otlp-sink -listen 127.0.0.1:4317 -out FILE [-pid PID] [-summary FUNC]
//
// Each line of FILE (appended as requests arrive, flushed after each request):
//
//	TIMESTAMP_NS <TAB> PID <TAB> TID <TAB> FRAME;FRAME;...   (leaf first, as sent)
//
// where a frame is "python:NAME@FILE:LINE" (frame type cpython), "KIND:NAME" for other
// named frames (kernel, other interpreters), "native:FILE+0xADDR" (FILE: the mapping's
// base name; the address as sent: native frames are not symbolized by the profiler),
// "error:CODE" for an error frame (no mapping: the address is the BPF error code, see
// tools/errors-codegen/errors.json upstream; -send-error-frames) and "abort-marker:CODE".
// A sample with several timestamps is written once per timestamp. On SIGINT or
// SIGTERM it prints to stderr, for -pid (every pid when 0), the events received and
// how many carry a Python frame named -summary (default train_step), then exits 0.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // the profiler compresses its requests
)

type sink struct {
	pprofileotlp.UnimplementedGRPCServer

	mu       sync.Mutex
	w        *bufio.Writer
	pid      int64
	fn       string
	events   int64 // events of -pid
	withFunc int64 // ... with a Python frame named -summary
}

// attr returns the value of attribute key among the indices into the dictionary's table.
func attr(dic pprofile.ProfilesDictionary, idx pcommon.Int32Slice, key string) (pcommon.Value, bool) {
	strs, tab := dic.StringTable(), dic.AttributeTable()
	for i := 0; i < idx.Len(); i++ {
		k := int(idx.At(i))
		if k < 0 || k >= tab.Len() {
			continue
		}
		a := tab.At(k)
		if ki := int(a.KeyStrindex()); ki >= 0 && ki < strs.Len() && strs.At(ki) == key {
			return a.Value(), true
		}
	}
	return pcommon.Value{}, false
}

func str(dic pprofile.ProfilesDictionary, i int32) string {
	if i < 0 || int(i) >= dic.StringTable().Len() {
		return ""
	}
	return dic.StringTable().At(int(i))
}

// frame renders one location (see the file comment); python reports a Python frame's name.
func frame(dic pprofile.ProfilesDictionary, li int32) (text, python string) {
	if li < 0 || int(li) >= dic.LocationTable().Len() {
		return "?", ""
	}
	loc := dic.LocationTable().At(int(li))
	kind := "native"
	if v, ok := attr(dic, loc.AttributeIndices(), "profile.frame.type"); ok {
		kind = v.Str()
	}
	name, file, line := "", "", int64(0)
	if loc.Lines().Len() > 0 {
		ln := loc.Lines().At(0)
		line = ln.Line()
		if fi := int(ln.FunctionIndex()); fi > 0 && fi < dic.FunctionTable().Len() {
			f := dic.FunctionTable().At(fi)
			name, file = str(dic, f.NameStrindex()), str(dic, f.FilenameStrindex())
		}
	}
	mi := int(loc.MappingIndex())
	switch {
	case kind == "abort-marker":
		return fmt.Sprintf("abort-marker:%d", loc.Address()), ""
	case (kind == "cpython" || kind == "python") && name != "":
		return fmt.Sprintf("python:%s@%s:%d", name, file, line), name
	case name != "":
		return fmt.Sprintf("%s:%s", kind, name), ""
	case mi <= 0 || mi >= dic.MappingTable().Len():
		// error frames carry no mapping; their "address" is the error code
		return fmt.Sprintf("error:%d", loc.Address()), ""
	default:
		m := dic.MappingTable().At(mi)
		return fmt.Sprintf("%s:%s+0x%x", kind, filepath.Base(str(dic, m.FilenameStrindex())),
			loc.Address()), ""
	}
}

func (s *sink) Export(_ context.Context, req pprofileotlp.ExportRequest) (pprofileotlp.ExportResponse, error) {
	pr := req.Profiles()
	dic := pr.Dictionary()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < pr.ResourceProfiles().Len(); i++ {
		rp := pr.ResourceProfiles().At(i)
		var pid int64
		if v, ok := rp.Resource().Attributes().Get("process.pid"); ok {
			pid = v.Int()
		}
		for j := 0; j < rp.ScopeProfiles().Len(); j++ {
			sp := rp.ScopeProfiles().At(j)
			for k := 0; k < sp.Profiles().Len(); k++ {
				s.profile(dic, pid, sp.Profiles().At(k))
			}
		}
	}
	if err := s.w.Flush(); err != nil {
		fmt.Fprintf(os.Stderr, "otlp-sink: write: %v\n", err)
	}
	return pprofileotlp.NewExportResponse(), nil
}

func (s *sink) profile(dic pprofile.ProfilesDictionary, pid int64, p pprofile.Profile) {
	for i := 0; i < p.Samples().Len(); i++ {
		smp := p.Samples().At(i)
		var tid int64
		if v, ok := attr(dic, smp.AttributeIndices(), "thread.id"); ok {
			tid = v.Int()
		}
		frames := []string{}
		hasFn := false
		if si := int(smp.StackIndex()); si > 0 && si < dic.StackTable().Len() {
			li := dic.StackTable().At(si).LocationIndices()
			for x := 0; x < li.Len(); x++ {
				t, py := frame(dic, li.At(x))
				frames = append(frames, strings.ReplaceAll(t, ";", ","))
				hasFn = hasFn || py == s.fn
			}
		}
		stack := strings.Join(frames, ";")
		ts := smp.TimestampsUnixNano()
		n := ts.Len()
		for x := 0; x < n; x++ {
			fmt.Fprintf(s.w, "%d\t%d\t%d\t%s\n", ts.At(x), pid, tid, stack)
		}
		if n == 0 { // no timestamps: one event, time unknown
			n = 1
			fmt.Fprintf(s.w, "0\t%d\t%d\t%s\n", pid, tid, stack)
		}
		if s.pid == 0 || s.pid == pid {
			s.events += int64(n)
			if hasFn {
				s.withFunc += int64(n)
			}
		}
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:4317", "gRPC listen address")
	out := flag.String("out", "", "file the sample events are appended to")
	pid := flag.Int64("pid", 0, "pid the exit summary counts (0: all)")
	fn := flag.String("summary", "train_step", "Python function the exit summary looks for")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "otlp-sink: -out FILE is required")
		os.Exit(2)
	}
	f, err := os.OpenFile(*out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "otlp-sink: %v\n", err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "otlp-sink: listen %s: %v\n", *listen, err)
		os.Exit(1)
	}
	s := &sink{w: bufio.NewWriterSize(f, 1<<20), pid: *pid, fn: *fn}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(256 << 20))
	pprofileotlp.RegisterGRPCServer(srv, s)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sig
		srv.Stop()
	}()
	fmt.Fprintf(os.Stderr, "otlp-sink: listening on %s\n", ln.Addr())
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintf(os.Stderr, "otlp-sink: %v\n", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.w.Flush(); err != nil {
		fmt.Fprintf(os.Stderr, "otlp-sink: write: %v\n", err)
	}
	fmt.Fprintf(os.Stderr, "otlp-sink: pid %d: %d samples, %d with a Python frame %s\n",
		*pid, s.events, s.withFunc, *fn)
}
