package cc

import "github.com/fastcnp/fastcnp/wire"

// CNPExtFromWire converts a decoded wire extension into the event form. The
// version is the decoder's business and is not checked here; an all-zero
// extension gives the zero CNPExt (a plain CNP).
func CNPExtFromWire(w *wire.CNPExt) CNPExt {
	return CNPExt{
		WindowValid: w.WindowValid(),
		BySwitch:    w.BySwitch(),
		SwitchID:    w.SwitchID,
		Port:        w.Port,
		Window:      int64(w.Window),
		QueueBytes:  int64(w.QueueBytes),
	}
}
