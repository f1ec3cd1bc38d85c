package policy

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/srt-go/srt/credential"
	"github.com/srt-go/srt/settings"
)

// MaskedFile is one masked credential file (Policy.MaskedFiles).
type MaskedFile struct {
	// Path is the file's resolved path (through the link guard).
	Path string
	// Data is what the sandbox reads there: the file with its secrets
	// replaced by sentinels.
	Data []byte
	// Perm is the mode the copy shows, the file's own without write bits.
	Perm fs.FileMode
	// Rule names the entry ("credentials.files[0]").
	Rule string
}

// maxCredentialFile bounds a masked file's size: a credential file is
// small, and its masked copy lives in memory for the sandbox's life.
const maxCredentialFile = 1 << 20

// creds is settings' credentials being compiled (Compile): the
// environment part at once (credentialsOf), the files once the link
// guard is known (maskFiles), the credential.Set last (set).
type creds struct {
	c       *settings.Credentials
	home    string
	secrets []credential.Secret
	env     []credential.EnvRule
	// whole says, of each variable that produced a secret, whether it is
	// masked whole-value (AWS pairs are made of those).
	whole map[string]bool
	// hosts are each entry's compiled injectHosts, by entry key
	// ("credentials.envVars[0]").
	hosts map[string]credential.HostMatcher
}

// credentialsOf checks s.Credentials against the compiled network (every
// masked entry's injectHosts reachable, tlsTerminate when masking) and
// masks the declared variables of srt's own environment. Nil when
// s has no credentials. Errors are *KeyError.
func credentialsOf(s *settings.Settings, nw Network, home string) (*creds, error) {
	if s.Credentials == nil {
		return nil, nil
	}
	cr := &creds{c: s.Credentials, home: home, whole: map[string]bool{}, hosts: map[string]credential.HostMatcher{}}
	check := func(key string, m settings.CredentialMasking) error {
		if m.Mode != settings.CredentialMask {
			return nil
		}
		if nw.TLS == nil && !cr.c.AllowPlaintextInject {
			return &KeyError{key + ".mode", fmt.Errorf("masking needs network.tlsTerminate, so that the real value leaves only over TLS srt verified; set it, or credentials.allowPlaintextInject to inject in cleartext too: %w", ErrUnenforceable)}
		}
		h, err := injectHosts(key, m.InjectHosts, s.Network, nw)
		cr.hosts[key] = h
		return err
	}
	for i, f := range cr.c.Files {
		if err := check(fmt.Sprintf("credentials.files[%d]", i), f.CredentialMasking); err != nil {
			return nil, err
		}
	}
	for i, v := range cr.c.EnvVars {
		key := fmt.Sprintf("credentials.envVars[%d]", i)
		if err := check(key, v.CredentialMasking); err != nil {
			return nil, err
		}
		if err := cr.envVar(key, v); err != nil {
			return nil, err
		}
	}
	return cr, nil
}

// envVar compiles one credentials.envVars entry from srt's environment:
// deny unsets it; mask shows its sentinels (credential.MaskValue). An
// unset or empty variable has no secret to mask.
func (cr *creds) envVar(key string, v settings.CredentialEnvVar) error {
	if v.Mode == settings.CredentialDeny {
		cr.env = append(cr.env, credential.EnvRule{Name: v.Name, Deny: true})
		return nil
	}
	val := os.Getenv(v.Name)
	if val == "" {
		return nil
	}
	m, err := maskOf(key, v.CredentialMasking, false)
	if err != nil {
		return err
	}
	got, err := credential.MaskValue([]byte(val), m)
	if err != nil {
		return &KeyError{key, err}
	}
	if len(got.Values) == 0 {
		deny, err := noMatch(key, v.CredentialMasking, "the variable", "$"+v.Name)
		if deny {
			cr.env = append(cr.env, credential.EnvRule{Name: v.Name, Deny: true})
		}
		return err
	}
	cr.env = append(cr.env, credential.EnvRule{Name: v.Name, Shown: string(got.Shown)})
	cr.add("env "+v.Name, key, got.Values)
	cr.whole[v.Name] = v.Extract == "" && v.Decode == ""
	return nil
}

// add records values as the secrets of entry key, named name.
func (cr *creds) add(name, key string, values []credential.Value) {
	for _, val := range values {
		cr.secrets = append(cr.secrets, credential.Secret{Name: name, Real: val.Real, Sentinel: val.Sentinel, Hosts: cr.hosts[key]})
	}
}

// maskOf compiles an entry's extract and decode into a credential.Mask.
func maskOf(key string, m settings.CredentialMasking, dups bool) (credential.Mask, error) {
	out := credential.Mask{JWT: m.Decode == "jwt", MaskClaims: m.MaskClaims, MaskDuplicates: dups}
	if m.Extract != "" {
		re, err := regexp.Compile(m.Extract)
		if err != nil {
			return out, &KeyError{key + ".extract", err}
		}
		out.Extract = re
	}
	return out, nil
}

// noMatchKey is the key onExtractNoMatch "error" names: extract, else
// decode.
func noMatchKey(key string, m settings.CredentialMasking) string {
	if m.Extract != "" {
		return key + ".extract"
	}
	return key + ".decode"
}

// expand makes a credentials.files path absolute ("~/" against home).
func (cr *creds) expand(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(cr.home, rest)
	}
	return filepath.Clean(p)
}

// fileRule is the Rule of credentials.files[i]'s denies.
func fileRule(i int) string { return fmt.Sprintf("mandatory: credentials.files[%d]", i) }

// readDenies are the read-denies of the "deny" files, mandatory so that
// no allowRead lifts them (dropMandatoryCarveOuts).
func (cr *creds) readDenies() []Path {
	var out []Path
	for i, f := range cr.files() {
		if f.Mode == settings.CredentialDeny {
			out = append(out, makePath(cr.expand(f.Path), OriginMandatory, fileRule(i)))
		}
	}
	return out
}

// writeDenies are the write-denies of every file, present or not, in
// both modes: no run may replace a credential file (or plant one, or a
// link, where it is missing) that srt or a host tool later reads.
func (cr *creds) writeDenies() []Path {
	var out []Path
	for i, f := range cr.files() {
		out = append(out, makePath(cr.expand(f.Path), OriginMandatory, fileRule(i)))
	}
	return out
}

// paths are the files' paths, "~/" expanded (Policy.CredentialFiles).
func (cr *creds) paths() []string {
	var out []string
	for _, f := range cr.files() {
		out = append(out, cr.expand(f.Path))
	}
	return out
}

func (cr *creds) files() []settings.CredentialFile {
	if cr == nil {
		return nil
	}
	return cr.c.Files
}

// filesystemDisabled refuses credentials.files with filesystem.disabled:
// there is no mount to hide or mask a file with.
func (cr *creds) filesystemDisabled() error {
	if len(cr.files()) == 0 {
		return nil
	}
	return &KeyError{"credentials.files[0]", fmt.Errorf("with filesystem.disabled the sandbox reads every file as is, so a credential file can be neither denied nor masked; remove filesystem.disabled or the entry: %w", ErrUnenforceable)}
}

// maskFiles reads each existing "mask" file through the policy's link
// guard and masks it into p.MaskedFiles; a file whose extract finds
// nothing follows onExtractNoMatch (deny: read-denied). A missing file
// is left out (it stays write-denied).
func (cr *creds) maskFiles(p *Policy) error {
	for i, f := range cr.files() {
		if f.Mode != settings.CredentialMask {
			continue
		}
		key := fmt.Sprintf("credentials.files[%d]", i)
		mp, err := p.guarded(makePath(cr.expand(f.Path), OriginMandatory, fileRule(i)))
		if err != nil {
			return &KeyError{key + ".path", err}
		}
		if mp.Kind == Missing {
			continue
		}
		data, perm, err := readCredentialFile(mp.Resolved)
		if err != nil {
			return &KeyError{key + ".path", err}
		}
		m, err := maskOf(key, f.CredentialMasking, f.MaskDuplicates)
		if err != nil {
			return err
		}
		got, err := credential.MaskValue(data, m)
		if err != nil {
			return &KeyError{key, err}
		}
		if len(got.Values) == 0 {
			deny, err := noMatch(key, f.CredentialMasking, "the file", mp.Resolved)
			if err != nil {
				return err
			}
			if deny {
				p.DenyRead = append(p.DenyRead, mp)
				p.AllowRead = dropMandatoryCarveOuts(p.AllowRead, p.DenyRead)
			}
			continue
		}
		p.MaskedFiles = append(p.MaskedFiles, MaskedFile{Path: mp.Resolved, Data: got.Shown, Perm: perm &^ 0o222, Rule: key})
		cr.add("file "+f.Path, key, got.Values)
	}
	return nil
}

// readCredentialFile reads the credential file at path (resolved) the
// way a run cannot redirect: not through a final link (O_NOFOLLOW), not
// blocking on a fifo (O_NONBLOCK), a regular file (fstat), with one
// name (a hard link an earlier run made elsewhere would be another
// spelling of the real content, which no mount covers), owned by srt's
// user or root (another user's file is theirs to change under srt), at
// most maxCredentialFile bytes. Refusals wrap ErrUnenforceable.
func readCredentialFile(path string) ([]byte, fs.FileMode, error) {
	f, err := openNoFollow(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	switch uid, ok := owner(fi); {
	case !fi.Mode().IsRegular():
		return nil, 0, fmt.Errorf("%s is not a regular file (%s): %w", path, typeName(fi.Mode()), ErrUnenforceable)
	case links(fi) > 1:
		return nil, 0, fmt.Errorf("%s has %d hard links, and the other names would show the real content; remove them (find -samefile) or copy the file: %w", path, links(fi), ErrUnenforceable)
	case ok && uid != 0 && uid != euid():
		return nil, 0, fmt.Errorf("%s is owned by another user (uid %d), who could change it under srt: %w", path, uid, ErrUnenforceable)
	case fi.Size() > maxCredentialFile:
		return nil, 0, fmt.Errorf("%s is %d bytes, more than a credential file's %d: %w", path, fi.Size(), maxCredentialFile, ErrUnenforceable)
	}
	data := make([]byte, fi.Size())
	n, err := f.ReadAt(data, 0)
	if err != nil && n != len(data) {
		return nil, 0, err
	}
	return data, fi.Mode().Perm(), nil
}

// set is the credential.Set of everything compiled: the secrets, the
// environment rules, the AWS pairs (credentials.awsPairs, and the
// conventional AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY
// [/ AWS_SESSION_TOKEN] trio when masked whole-value and in no explicit
// pair), the SigV4 policy. Nil when there is nothing to apply.
func (cr *creds) set() *credential.Set {
	if cr == nil || (len(cr.secrets) == 0 && len(cr.env) == 0) {
		return nil
	}
	opts := credential.Options{AllowPlaintext: cr.c.AllowPlaintextInject, Env: cr.env, SigV4: credential.SigV4Policy{
		PassStreaming: cr.c.SigV4.Streaming == "passthrough",
		PassPresigned: cr.c.SigV4.Presigned == "passthrough",
		PassSigV4A:    cr.c.SigV4.SigV4A == "passthrough",
	}}
	name := func(v string) string {
		if v == "" || !cr.whole[v] {
			return ""
		}
		return "env " + v
	}
	paired := map[string]bool{}
	for _, a := range cr.c.AWSPairs {
		paired[a.AccessKeyIDVar], paired[a.SecretAccessKeyVar], paired[a.SessionTokenVar] = true, true, true
		if id, key := name(a.AccessKeyIDVar), name(a.SecretAccessKeyVar); id != "" && key != "" {
			opts.AWSPairs = append(opts.AWSPairs, credential.AWSPair{AccessKeyID: id, SecretAccessKey: key, SessionToken: name(a.SessionTokenVar)})
		}
	}
	const id, key, tok = "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"
	if !paired[id] && !paired[key] && name(id) != "" && name(key) != "" {
		a := credential.AWSPair{AccessKeyID: name(id), SecretAccessKey: name(key)}
		if !paired[tok] {
			a.SessionToken = name(tok)
		}
		opts.AWSPairs = append(opts.AWSPairs, a)
	}
	return credential.NewSet(slices.Clip(cr.secrets), opts)
}

// MasksDenied returns p with every masked file read-denied instead of
// masked (a mandatory DenyRead at its resolved path, which no allowRead
// lifts, and no MaskedFiles), for a backend that cannot show a copy in
// the file's place: Seatbelt (the reference denies a masked file on
// macOS too). p itself is not changed.
func (p *Policy) MasksDenied() *Policy {
	if len(p.MaskedFiles) == 0 {
		return p
	}
	q := *p
	q.DenyRead = slices.Clone(p.DenyRead)
	for _, mf := range p.MaskedFiles {
		q.DenyRead = append(q.DenyRead, makePath(mf.Path, OriginMandatory, "mandatory: "+mf.Rule))
	}
	q.AllowRead = dropMandatoryCarveOuts(slices.Clone(p.AllowRead), q.DenyRead)
	q.MaskedFiles = nil
	return &q
}

// typeName names the type of a file that is not a regular one.
func typeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a fifo"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a regular file"
}

// noMatch applies onExtractNoMatch to entry key, whose extract or decode
// found nothing in what (a variable "$NAME", a file's path), itself
// ("the variable", "the file"): warn shows it as is, with a warning;
// error is a *KeyError; deny (the default) withholds it (deny true),
// with a warning so that the run says why it is missing.
func noMatch(key string, cm settings.CredentialMasking, itself, what string) (deny bool, err error) {
	switch cm.OnExtractNoMatch {
	case settings.NoMatchWarn:
		slog.Warn("credentials: nothing to mask found; "+itself+" is shown as is", "rule", key, "in", what)
		return false, nil
	case settings.NoMatchError:
		return false, &KeyError{noMatchKey(key, cm), fmt.Errorf("found nothing to mask in %s", what)}
	}
	slog.Warn("credentials: nothing to mask found; "+itself+" is withheld (onExtractNoMatch: deny)", "rule", key, "in", what)
	return true, nil
}
