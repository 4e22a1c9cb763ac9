package pipeline

import (
	"testing"
	"unsafe"
)

// TestCacheLayout pins the sizes the data path's layout relies on (state.go,
// tables.go, index.go, dataplane.go): one cache line per port's cells and per
// decoded port configuration, flow cells and index slots that never straddle two
// lines, entries that start on a line.
func TestCacheLayout(t *testing.T) {
	tests := []struct {
		name string
		size uintptr
		want uintptr
	}{
		{"portCells", unsafe.Sizeof(portCells{}), 64},
		{"pcCacheEntry", unsafe.Sizeof(pcCacheEntry{}), 64},
		{"flowCells", unsafe.Sizeof(flowCells{}), 32},
		{"flatSlot", unsafe.Sizeof(flatSlot{}), 32},
		{"entry", unsafe.Sizeof(entry{}), 256},
	}
	for _, tt := range tests {
		if tt.size != tt.want {
			t.Errorf("%s is %d bytes, want %d (a field was added: resize the padding or the layout)", tt.name, tt.size, tt.want)
		}
	}
}

// TestRegistersDistinctCells writes a different value into a cell of every
// register through WriteRegister and reads every register back: with the port
// and flow cells laid out per index, a register that shares or misses its
// storage shows up as a wrong value in another.
func TestRegistersDistinctCells(t *testing.T) {
	p := New(Options{})
	regs := schema.Registers
	for _, idx := range []int{0, 1, 511} {
		for k, r := range regs {
			i := idx % r.Size
			if err := p.WriteRegister(r.ID, i, uint64(k+1)&widthMask(r.Bitwidth)); err != nil {
				t.Fatalf("write %s[%d]: %v", r.Name, i, err)
			}
		}
		for k, r := range regs {
			i := idx % r.Size
			got, err := p.ReadRegister(r.ID, i, nil)
			if err != nil {
				t.Fatalf("read %s[%d]: %v", r.Name, i, err)
			}
			if want := uint64(k+1) & widthMask(r.Bitwidth); len(got) != 1 || got[0].Value != want {
				t.Errorf("%s[%d] = %v, want %d", r.Name, i, got, want)
			}
		}
	}
}
