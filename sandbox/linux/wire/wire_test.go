package wire

import (
	"encoding/json"
	"testing"

	"github.com/srt-go/srt/seccomp"
)

// TestFieldNames pins the JSON of every message: srt and the process it
// starts are one binary today, but a renamed field would silently drop a
// setting (a zero KeepFDs, a zero NotifyFD) rather than fail.
func TestFieldNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  any
		want string
	}{
		{"InitSpec", InitSpec{
			Argv: []string{"a"}, KeepFDs: []int{3}, CloseFDs: []int{4}, Ctty: -1, StartedFD: 5, LifelineFD: 6,
			ListenFD: 7, Listeners: []ListenSpec{{ListenerHTTP, "127.0.0.1:3128"}}, NotifyFD: 8,
			RequireListener: true, AgentFD: 9,
		}, `{"argv":["a"],"keepFds":[3],"closeFds":[4],"ctty":-1,"startedFd":5,"lifelineFd":6,"listenFd":7,` +
			`"listeners":[{"name":"http","addr":"127.0.0.1:3128"}],"seccomp":SECCOMP,"notifyFd":8,"requireListener":true,"agentFd":9}`},
		{"InitSpec zero", InitSpec{}, `{"argv":null,"ctty":0,"startedFd":0,"lifelineFd":0,"listenFd":0,"seccomp":SECCOMP,"notifyFd":0}`},
		{"AgentMsg", AgentMsg{Op: AgentExec, ID: 1, Argv: []string{"a"}, Env: []string{"K=V"}, Dir: "/d", TTY: true, Sig: 2, Pid: 3, Code: 4, Signal: 5, Error: "e"},
			`{"op":"exec","id":1,"argv":["a"],"env":["K=V"],"dir":"/d","tty":true,"sig":2,"pid":3,"code":4,"signal":5,"error":"e"}`},
		{"AgentMsg ready", AgentMsg{Op: AgentReady}, `{"op":"ready"}`},
		{"GuardianRequest", GuardianRequest{Op: GuardianCreate, Path: "/p", Dir: true, Content: "c", PIDs: []int{1}},
			`{"op":"create","path":"/p","dir":true,"content":"c","pids":[1]}`},
		{"GuardianReply", GuardianReply{Created: true, Error: "e"}, `{"created":true,"error":"e"}`},
		{"LandlockSpec", LandlockSpec{Argv: []string{"a"}, ReadDirs: []string{"/r"}, ReadFiles: []string{"/f"}, ListDirs: []string{"/l"},
			WriteDirs: []string{"/w"}, WriteFiles: []string{"/wf"}, Devices: []string{"/dev/null"}, TCPPorts: []uint16{1}, Ctty: -1, KeepFDs: []int{3}, NotifyFD: 4},
			`{"argv":["a"],"readDirs":["/r"],"readFiles":["/f"],"listDirs":["/l"],"writeDirs":["/w"],"writeFiles":["/wf"],` +
				`"devices":["/dev/null"],"tcpPorts":[1],"seccomp":SECCOMP,"ctty":-1,"keepFds":[3],"notifyFd":4}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, _ := json.Marshal(seccomp.Options{})
			want := []byte(tc.want)
			for i := 0; i+7 <= len(want); i++ {
				if string(want[i:i+7]) == "SECCOMP" {
					want = append(append(append([]byte{}, want[:i]...), sc...), want[i+7:]...)
					break
				}
			}
			got, err := json.Marshal(tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
	var info BwrapInfo
	if err := json.Unmarshal([]byte(`{"child-pid": 42, "cgroup-namespace": 1}`), &info); err != nil || info.ChildPID != 42 {
		t.Errorf("BwrapInfo = %+v, %v", info, err)
	}
}
