package microvm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/srt-go/srt/microvm/internal/wire"
	"golang.org/x/sys/unix"
)

// control sends one VM-wide request to the agent.
func (v *VM) control(ctx context.Context, op string) error {
	v.mu.Lock()
	sess := v.sess
	v.mu.Unlock()
	if sess == nil {
		return fmt.Errorf("control %s: %w", op, ErrState)
	}
	ctx, cancel := context.WithTimeout(ctx, v.cfg.RequestTimeout)
	defer cancel()
	st, err := sess.OpenStream()
	if err != nil {
		return fmt.Errorf("control %s: %w", op, err)
	}
	defer st.Close()
	stop := context.AfterFunc(ctx, func() { st.Close() })
	defer stop()
	st.Write([]byte{byte(wire.KindControl)})
	if err := wire.WriteJSON(st, wire.Control{Op: op}); err != nil {
		return fmt.Errorf("control %s: %w", op, err)
	}
	var r wire.ControlReply
	if err := wire.ReadJSON(st, &r); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return fmt.Errorf("control %s: %w", op, err)
	}
	if r.Error != "" {
		return fmt.Errorf("control %s: %s", op, r.Error)
	}
	return nil
}

// SuspendOptions choose how Suspend pauses the VM.
type SuspendOptions struct {
	// ToDisk saves the VM's state to an unlinked file (QEMU migration to
	// a file descriptor) and stops QEMU, which frees the guest's RAM;
	// Resume starts a new QEMU from it. It needs a warm VM (no Exec
	// running) whose shares are idle: QEMU cannot migrate while a 9p
	// export is mounted, so the guest unmounts them first and remounts
	// them on Resume. Otherwise it returns an error wrapping ErrBusy and
	// leaves the VM running. Without ToDisk the vCPUs are just stopped
	// (QMP "stop"); the RAM stays allocated.
	ToDisk bool
}

// Suspend pauses a warm or active VM (StateSuspended). Running processes
// are frozen with it. ctx and Config.RequestTimeout bound it.
func (v *VM) Suspend(ctx context.Context, opts SuspendOptions) error {
	v.mu.Lock()
	st, active, q := v.state, v.active, v.q
	v.mu.Unlock()
	if st != StateWarm && st != StateActive {
		return fmt.Errorf("suspend a %s VM: %w", st, ErrState)
	}
	ctx, cancel := context.WithTimeout(ctx, v.cfg.RequestTimeout+60*time.Second)
	defer cancel()
	if !opts.ToDisk {
		if _, err := q.exec("stop", nil, nil, v.cfg.RequestTimeout); err != nil {
			return err
		}
		v.setState(StateSuspended)
		return nil
	}
	if active > 0 {
		return fmt.Errorf("suspend to disk with %d processes running: %w", active, ErrBusy)
	}
	if err := v.control(ctx, "quiesce"); err != nil {
		return fmt.Errorf("%w: %v", ErrBusy, err)
	}
	snap, err := snapshotFile()
	if err != nil {
		v.configureGuest(ctx) // remount
		return err
	}
	if err := v.migrateOut(ctx, q, snap); err != nil {
		snap.Close()
		q.exec("cont", nil, nil, v.cfg.RequestTimeout)
		v.configureGuest(ctx)
		return fmt.Errorf("snapshot: %w", err)
	}
	// The state is on disk: stop QEMU. From here the control channel
	// waits for the next QEMU instead of failing.
	v.mu.Lock()
	v.snapshot = snap
	v.state = StateSuspended
	p := v.qemu
	v.ctl.detach()
	v.mu.Unlock()
	q.exec("quit", nil, nil, 5*time.Second)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		unix.Kill(-p.cmd.Process.Pid, unix.SIGKILL)
		<-p.done
	}
	return nil
}

// snapshotFile is an unlinked temporary file: the snapshot never
// outlives this process, whatever way it ends.
func snapshotFile() (*os.File, error) {
	dir := getenv("SRT_MICROVM_SNAPSHOT_DIR", "/var/tmp")
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		f, err := os.CreateTemp(dir, ".srt-microvm-snapshot-")
		if err != nil {
			return nil, fmt.Errorf("snapshot file: %w", err)
		}
		os.Remove(f.Name())
		return f, nil
	}
	return os.NewFile(uintptr(fd), "snapshot"), nil
}

// migrateOut stops the vCPUs and writes the VM state into f: QMP getfd
// hands QEMU the descriptor, then "migrate fd:NAME" (QEMU 7.2 has no
// file: URI, and -sandbox spawn=deny forbids exec:).
func (v *VM) migrateOut(ctx context.Context, q *qmp, f *os.File) error {
	if _, err := q.exec("stop", nil, nil, v.cfg.RequestTimeout); err != nil {
		return err
	}
	fd := int(f.Fd())
	if _, err := q.exec("getfd", map[string]any{"fdname": "snap"}, &fd, v.cfg.RequestTimeout); err != nil {
		return err
	}
	if _, err := q.exec("migrate", map[string]any{"uri": "fd:snap"}, nil, v.cfg.RequestTimeout); err != nil {
		return err
	}
	return waitMigration(ctx, q, v.cfg.RequestTimeout)
}

func waitMigration(ctx context.Context, q *qmp, timeout time.Duration) error {
	for {
		r, err := q.exec("query-migrate", nil, nil, timeout)
		if err != nil {
			return err
		}
		var m struct {
			Status    string `json:"status"`
			ErrorDesc string `json:"error-desc"`
		}
		json.Unmarshal(r, &m)
		switch m.Status {
		case "completed":
			return nil
		case "failed", "cancelled":
			return fmt.Errorf("migration %s: %s", m.Status, m.ErrorDesc)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Resume continues a suspended VM. From a disk snapshot it starts a new
// QEMU that loads the state, then remounts the shares and steps the
// guest clock; the control channel and every stream on it survive.
func (v *VM) Resume(ctx context.Context) error {
	v.mu.Lock()
	st, snap, q := v.state, v.snapshot, v.q
	v.mu.Unlock()
	if st != StateSuspended {
		return fmt.Errorf("resume a %s VM: %w", st, ErrState)
	}
	ctx, cancel := context.WithTimeout(ctx, v.cfg.BootTimeout)
	defer cancel()
	if snap == nil {
		if _, err := q.exec("cont", nil, nil, v.cfg.RequestTimeout); err != nil {
			return err
		}
		v.resumed()
		return nil
	}
	if err := v.startQEMU(ctx, true); err != nil {
		v.fail(fmt.Errorf("resume: %w", err))
		return err
	}
	v.mu.Lock()
	q = v.q
	v.mu.Unlock()
	if _, err := snap.Seek(0, 0); err != nil {
		return err
	}
	fd := int(snap.Fd())
	err := func() error {
		if _, err := q.exec("getfd", map[string]any{"fdname": "snap"}, &fd, v.cfg.RequestTimeout); err != nil {
			return err
		}
		if _, err := q.exec("migrate-incoming", map[string]any{"uri": "fd:snap"}, nil, v.cfg.RequestTimeout); err != nil {
			return err
		}
		for {
			s, err := q.status(v.cfg.RequestTimeout)
			if err != nil {
				return err
			}
			if s != "inmigrate" {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
		if _, err := q.exec("cont", nil, nil, v.cfg.RequestTimeout); err != nil {
			return err
		}
		return v.configureGuest(ctx)
	}()
	if err != nil {
		err = fmt.Errorf("resume from snapshot: %w", err)
		v.fail(err)
		return err
	}
	v.mu.Lock()
	v.snapshot = nil
	v.mu.Unlock()
	snap.Close()
	v.resumed()
	return nil
}

func (v *VM) resumed() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.state == StateSuspended {
		v.state = StateWarm
		if v.active > 0 {
			v.state = StateActive
		}
	}
}
