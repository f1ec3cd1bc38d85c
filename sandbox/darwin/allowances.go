package darwin

// The fixed allowances of the srt profile, as narrow as the reference's
// (srt-notes §5, items 2-7): what a command-line program needs from the
// system beyond files and network. Each list is written as it stands;
// nothing is added from settings except where noted.

// machServices are the XPC/Mach services any command may look up:
// sound, notifications, fonts, logging, Launch Services' database, power
// state, directory services (user and group lookups), per-user temporary
// directories, and the security daemon (certificate and keychain calls
// that even a TLS client makes).
var machServices = []string{
	"com.apple.audio.systemsoundserver",
	"com.apple.distributed_notifications@Uv3",
	"com.apple.FontObjectsServer",
	"com.apple.fonts",
	"com.apple.logd",
	"com.apple.lsd.mapdb",
	"com.apple.PowerManagement.control",
	"com.apple.system.logger",
	"com.apple.system.notification_center",
	"com.apple.system.opendirectoryd.libinfo",
	"com.apple.system.opendirectoryd.membership",
	"com.apple.bsd.dirhelper",
	"com.apple.securityd.xpc",
	"com.apple.coreservices.launchservicesd",
	"com.apple.SecurityServer",
}

// trustdService is only allowed with enableWeakerNetworkIsolation: Go
// programs verify TLS certificates through it, and it is a channel out of
// the sandbox (srt-notes §1.1).
const trustdService = "com.apple.trustd.agent"

// appleEventServices are added with allowAppleEvents (open, osascript).
var appleEventServices = []string{
	"com.apple.coreservices.appleevents",
}

// iokitClasses are the IOKit user clients a program may open (graphics
// surfaces and power-state queries).
var iokitClasses = []string{
	"IOSurfaceRootUserClient",
	"RootDomainUserClient",
	"IOSurfaceSendRight",
}

// sysctlNames are the sysctl values a program may read: hardware and
// kernel identification that runtimes (Go, Node, Python, the JVM) query
// at start-up.
var sysctlNames = []string{
	"hw.activecpu", "hw.busfrequency_compat", "hw.byteorder", "hw.cacheconfig",
	"hw.cachelinesize_compat", "hw.cpufamily", "hw.cpufrequency", "hw.cpufrequency_compat",
	"hw.cputype", "hw.l1dcachesize_compat", "hw.l1icachesize_compat", "hw.l2cachesize_compat",
	"hw.l3cachesize_compat", "hw.logicalcpu", "hw.logicalcpu_max", "hw.machine",
	"hw.memsize", "hw.model", "hw.ncpu", "hw.nperflevels", "hw.pagesize", "hw.pagesize_compat",
	"hw.physicalcpu", "hw.physicalcpu_max", "hw.tbfrequency_compat", "hw.vectorunit",
	"kern.argmax", "kern.bootargs", "kern.boottime", "kern.hostname", "kern.maxfiles",
	"kern.maxfilesperproc", "kern.maxproc", "kern.ngroups", "kern.osproductversion",
	"kern.osrelease", "kern.ostype", "kern.osvariant_status", "kern.osversion",
	"kern.secure_kernel", "kern.tcsm_available", "kern.tcsm_enable", "kern.usrstack64",
	"kern.version", "kern.willshutdown", "machdep.ptrauth_enabled",
	"security.mac.lockdown_mode_state", "sysctl.proc_cputype", "vm.loadavg",
}

// sysctlPrefixes are sysctl name prefixes a program may read: CPU
// features, performance levels, and its own processes (ps, top of the
// sandbox's processes need kern.proc).
var sysctlPrefixes = []string{
	"hw.optional.", "hw.perflevel", "kern.proc.all", "kern.proc.pgrp.",
	"kern.proc.pid.", "kern.proc.uid.", "machdep.cpu.", "net.routetable.",
}

// sysctlWritable is the one sysctl a program may set (the CPU's
// speculative-execution mitigation toggle, set by some runtimes).
const sysctlWritable = "kern.tcsm_enable"

// ioctlDevices are the devices a program may ioctl.
var ioctlDevices = []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/dtracehelper", "/dev/tty"}

// deviceWritePaths are always writable (the reference's default write
// paths, srt-notes §1.3).
var deviceWritePaths = []string{"/dev/stdout", "/dev/stderr", "/dev/null", "/dev/tty", "/dev/dtracehelper", "/dev/autofs_nowait"}

// ptyPaths are the pseudo-terminal devices allowPty opens: the master
// multiplexer, and the slaves as a regex (their numbers are not known in
// advance).
const (
	ptyMaster     = "/dev/ptmx"
	ptySlaveRegex = "^/dev/ttys[0-9]*$"
)
