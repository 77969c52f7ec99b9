package browser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Options configure a Browser. The zero value is a 1280×900 window with a
// 30 s limit per page action.
type Options struct {
	Width, Height int           // window size in CSS pixels
	ActionTimeout time.Duration // limit for each helper call
	// Logf, when set, receives chromedp's own log and error lines.
	Logf func(format string, args ...any)
}

// Browser is one headless Chromium with its own profile directory and one
// tab. Its helpers are safe to call from one goroutine at a time.
type Browser struct {
	ctx     context.Context // the tab's context
	cancel  func()          // closes the tab, the browser and the allocator
	profile string
	timeout time.Duration

	cmd *exec.Cmd // the browser's process, leader of its own group

	mu     sync.Mutex
	events []string // console errors, exceptions and error log entries
}

// groupExitWait bounds how long Close waits for the browser's processes
// to be gone before it removes the profile.
const groupExitWait = 10 * time.Second

// New starts a browser for a test and closes it (and removes its profile)
// when the test ends. A missing browser fails the test with InstallHint:
// browser tests must never pass by not running.
func New(t testing.TB, opts Options) *Browser {
	t.Helper()
	b, err := Start(opts)
	if err != nil {
		t.Fatalf("starting headless Chromium: %v", err)
	}
	t.Cleanup(b.Close)
	return b
}

// Start finds and starts the browser. The caller must Close it.
func Start(opts Options) (*Browser, error) {
	path, err := Find()
	if err != nil {
		return nil, err
	}
	if opts.Width == 0 || opts.Height == 0 {
		opts.Width, opts.Height = 1280, 900
	}
	if opts.ActionTimeout == 0 {
		opts.ActionTimeout = 30 * time.Second
	}
	profile, err := os.MkdirTemp("", "allot-chromium-")
	if err != nil {
		return nil, fmt.Errorf("creating browser profile directory: %w", err)
	}
	b := &Browser{profile: profile, timeout: opts.ActionTimeout}
	aopts := append(allocatorOptions(path, profile, opts), chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
		ownGroup(cmd)
		b.cmd = cmd
	}))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), aopts...)
	var ctxOpts []chromedp.ContextOption
	if opts.Logf != nil {
		ctxOpts = append(ctxOpts, chromedp.WithLogf(opts.Logf), chromedp.WithErrorf(opts.Logf))
	} else {
		ctxOpts = append(ctxOpts, chromedp.WithErrorf(func(string, ...any) {}))
	}
	tabCtx, cancelTab := chromedp.NewContext(allocCtx, ctxOpts...)
	b.ctx = tabCtx
	b.cancel = func() { cancelTab(); cancelAlloc() }
	chromedp.ListenTarget(tabCtx, b.record)
	// The first Run starts the browser, bound to the context it is given:
	// it must be the tab's own, not one with a deadline, or the browser
	// closes when that deadline's context is cancelled. log.Enable adds the
	// browser's own error entries (failed resource loads, CSP violations).
	if err := chromedp.Run(tabCtx, log.Enable(), runtime.Enable()); err != nil {
		b.Close()
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	return b, nil
}

// allocatorOptions are chromedp's defaults plus everything that keeps the
// browser on loopback and quiet: no background networking, component
// updates, sync or default apps; every host name but loopback resolves to
// nothing, and every connection not to loopback goes to a dead proxy.
func allocatorOptions(path, profile string, opts Options) []chromedp.ExecAllocatorOption {
	o := append([]chromedp.ExecAllocatorOption{}, chromedp.DefaultExecAllocatorOptions[:]...)
	o = append(o,
		chromedp.ExecPath(path),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(opts.Width, opts.Height),
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("dns-prefetch-disable", true),
		chromedp.Flag("disable-features", "site-per-process,Translate,BlinkGenPropertyTrees,OptimizationHints,MediaRouter,DialMediaRouteProvider,AutofillServerCommunication"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"),
		chromedp.ProxyServer("http://127.0.0.1:9"),
		chromedp.Flag("proxy-bypass-list", "127.0.0.1;localhost;[::1]"),
		chromedp.Flag("lang", "en-US"),
	)
	if os.Geteuid() == 0 {
		// Chromium refuses to start its sandbox as root.
		o = append(o, chromedp.NoSandbox)
	}
	return o
}

// Close stops the browser and removes its profile directory. The browser's
// helper processes outlive it briefly and write into the profile as they
// exit, so Close kills its process group and waits (up to groupExitWait)
// until none is left before removing the directory.
func (b *Browser) Close() {
	if b.cancel != nil {
		b.cancel()
		b.cancel = nil
	}
	if b.cmd != nil && b.cmd.Process != nil {
		pgid := b.cmd.Process.Pid
		deadline := time.Now().Add(groupExitWait)
		ticker := time.NewTicker(20 * time.Millisecond)
		for groupAlive(pgid) && time.Now().Before(deadline) {
			killGroup(pgid)
			<-ticker.C
		}
		ticker.Stop()
		b.cmd = nil
	}
	if b.profile != "" {
		os.RemoveAll(b.profile)
		b.profile = ""
	}
}

// record keeps console errors, uncaught exceptions and error log entries.
// It runs on chromedp's event goroutine and must not block.
func (b *Browser) record(ev any) {
	var line string
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type != runtime.APITypeError && e.Type != runtime.APITypeAssert {
			return
		}
		line = "console." + string(e.Type) + ":"
		for _, a := range e.Args {
			line += " " + remoteText(a)
		}
	case *runtime.EventExceptionThrown:
		line = "exception: " + e.ExceptionDetails.Text
		if e.ExceptionDetails.Exception != nil {
			line += " " + e.ExceptionDetails.Exception.Description
		}
		line += fmt.Sprintf(" (%s:%d)", e.ExceptionDetails.URL, e.ExceptionDetails.LineNumber)
	case *log.EventEntryAdded:
		if e.Entry.Level != log.LevelError {
			return
		}
		line = fmt.Sprintf("log.%s: %s (%s)", e.Entry.Source, e.Entry.Text, e.Entry.URL)
	default:
		return
	}
	b.mu.Lock()
	b.events = append(b.events, line)
	b.mu.Unlock()
}

// remoteText renders a console argument.
func remoteText(o *runtime.RemoteObject) string {
	switch {
	case o == nil:
		return ""
	case o.Description != "":
		return o.Description
	case len(o.Value) > 0:
		return string(o.Value)
	}
	return string(o.Type)
}

// Errors returns the console errors, uncaught exceptions and error log
// entries recorded since the browser started or since ClearErrors.
func (b *Browser) Errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.events...)
}

// ClearErrors forgets the recorded errors.
func (b *Browser) ClearErrors() {
	b.mu.Lock()
	b.events = nil
	b.mu.Unlock()
}

// run runs actions on the tab under the action timeout.
func (b *Browser) run(actions ...chromedp.Action) error {
	ctx, cancel := context.WithTimeout(b.ctx, b.timeout)
	defer cancel()
	return chromedp.Run(ctx, actions...)
}
