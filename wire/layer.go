package wire

// Layer names one header kind. Frame.Off is indexed by Layer.
type Layer uint8

// Layers, in wire order.
const (
	LayerPacketOut    Layer = iota // packet_out controller header (2 bytes)
	LayerPacketIn                  // packet_in controller header (2 bytes)
	LayerEthernet                  // Ethernet II (14 bytes)
	LayerDot1Q                     // 802.1Q tag after the source MAC (4 bytes: TCI + inner EtherType)
	LayerMACControl                // MAC control opcode (2 bytes)
	LayerPFC                       // PFC body: class-enable vector + 8 pause times (18 bytes)
	LayerPause                     // 802.3x PAUSE body: pause time (2 bytes)
	LayerIPv4                      // IPv4 header without options (20 bytes)
	LayerUDP                       // UDP (8 bytes)
	LayerBTH                       // InfiniBand Base Transport Header (12 bytes)
	LayerAETH                      // ACK Extended Transport Header (4 bytes)
	LayerCNPExt                    // fastcnp CNP extension (16 bytes)
	LayerINC                       // INC base header (4 bytes)
	LayerINCIDs                    // INC IDS part (16 bytes)
	LayerINCVector                 // INC vector (INCVectorLen * 4 bytes)
	LayerINT                       // INT header (4 bytes)
	LayerINTHops                   // INT hop records (INTHopLen each, HopCount of them)
	LayerAnnouncement              // RDMA-connection announcement (32 bytes)
	LayerICRC                      // RoCEv2 invariant CRC (4 bytes)
	numLayers
)

// NumLayers is the number of Layer values (the length of Frame.Off).
const NumLayers = int(numLayers)

var layerNames = [numLayers]string{
	"packet_out", "packet_in", "ethernet", "dot1q", "mac_control", "pfc", "pause",
	"ipv4", "udp", "bth", "aeth", "cnp_ext", "inc", "inc_ids", "inc_vector",
	"int", "int_hops", "announcement", "icrc",
}

// String returns the layer's short name ("ipv4", "bth", ...).
func (l Layer) String() string {
	if l < numLayers {
		return layerNames[l]
	}
	return "layer?"
}
