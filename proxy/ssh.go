package proxy

import (
	"encoding/binary"
	"io"
	"strings"
	"unicode/utf8"
)

// sshBanner is the identification line the proxy sends in place of the
// refused server's (RFC 4253 §4.2: "SSH-protoversion-softwareversion",
// ending in CR LF; the software version may not contain '-' or spaces).
const sshBanner = "SSH-2.0-srt_policy_refusal\r\n"

// SSH constants used by the refusal.
const (
	sshMsgDisconnect = 1 // SSH_MSG_DISCONNECT, RFC 4253 §11.1 / RFC 4250 §4.1.2
	// sshDisconnectHostNotAllowed is SSH_DISCONNECT_HOST_NOT_ALLOWED_TO_CONNECT,
	// reason code 1 in RFC 4253 §11.1 and RFC 4250 §4.2.2 (code 2 is
	// PROTOCOL_ERROR).
	sshDisconnectHostNotAllowed = 1
	sshBlockSize                = 8 // before key exchange, RFC 4253 §6
	sshMinPadding               = 4 // RFC 4253 §6
	maxSSHReason                = 1000
)

// writeSSHRefusal writes the proxy's SSH identification line and one
// unencrypted SSH_MSG_DISCONNECT packet whose description is reason.
// OpenSSH prints such a message as
// "Received disconnect from UNKNOWN port 65535:1: <reason>".
//
// Before key exchange the binary packet protocol (RFC 4253 §6) runs with
// the "none" cipher and no MAC, so a packet is:
//
//	uint32  packet_length    bytes that follow, not counting itself or the MAC
//	byte    padding_length
//	byte[n] payload          n = packet_length - padding_length - 1
//	byte[p] random padding   p = padding_length, at least 4
//	(no MAC)
//
// and the whole packet (4 + packet_length) must be a multiple of the block
// size, which is 8 while no cipher is in use. The payload is
// (RFC 4253 §11.1):
//
//	byte    SSH_MSG_DISCONNECT (1)
//	uint32  reason code (1, HOST_NOT_ALLOWED_TO_CONNECT)
//	string  description, UTF-8 (RFC 4251 §5: uint32 length, then bytes)
//	string  language tag (empty)
//
// Padding content is not checked by peers; zeros are used, since nothing
// here is secret.
func writeSSHRefusal(w io.Writer, reason string) error {
	_, err := w.Write(sshDisconnectPacket(reason, true))
	return err
}

// sshDisconnectPacket returns the identification line (if banner) and the
// framed disconnect packet.
func sshDisconnectPacket(reason string, banner bool) []byte {
	desc := sshDescription(reason)
	payload := []byte{sshMsgDisconnect}
	payload = binary.BigEndian.AppendUint32(payload, sshDisconnectHostNotAllowed)
	payload = binary.BigEndian.AppendUint32(payload, uint32(len(desc)))
	payload = append(payload, desc...)
	payload = binary.BigEndian.AppendUint32(payload, 0) // language tag ""

	// 4 (packet_length) + 1 (padding_length) + payload + padding ≡ 0 mod 8.
	pad := sshBlockSize - (4+1+len(payload))%sshBlockSize
	if pad < sshMinPadding {
		pad += sshBlockSize
	}
	var out []byte
	if banner {
		out = append(out, sshBanner...)
	}
	out = binary.BigEndian.AppendUint32(out, uint32(1+len(payload)+pad))
	out = append(out, byte(pad))
	out = append(out, payload...)
	out = append(out, make([]byte, pad)...)
	return out
}

// sshDescription keeps reason as valid UTF-8 without control characters
// (OpenSSH filters them anyway) and bounds its length.
func sshDescription(reason string) string {
	if reason == "" {
		reason = "connection refused by the sandbox network policy"
	}
	reason = strings.ToValidUTF8(reason, "?")
	reason = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, reason)
	if len(reason) > maxSSHReason {
		reason = reason[:maxSSHReason]
		for !utf8.ValidString(reason) {
			reason = reason[:len(reason)-1]
		}
	}
	return reason
}
