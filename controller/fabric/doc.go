// Package fabric computes what every switch of the fabric should hold and how
// to get it there, without any I/O.
//
// Desired turns the configuration (controller/config), the RDMA connections
// learned from announcements or the API (ConnTable) and the previous INC route
// table of a switch into a State: every P4Runtime entity fastcnpd owns on that
// switch (table entries of ipv4_route, next_hop_group_select,
// traffic_class, port_config, rdma_connection, inc_group, inc_slot_timeout,
// inc_route and the three window tables, the members and groups of the ECMP
// action selector next_hop_selector, the announce_udp_port value set, clone
// session 100 and the two digest configurations), each under a canonical
// key. ECMP member and group IDs are derived from content (ecmp.go), so
// every computation of the desired state gives the same ones.
//
// Keys and values are canonical: match fields and action parameters sorted by
// ID, bytestrings in P4Runtime canonical form, so an entity built here and the
// same entity read back from a switch (which may pad its bytestrings) give
// the same key and value. Diff compares a desired State with a read-back one
// and returns the fewest updates that make the switch equal to it: INSERT
// what is missing, MODIFY what differs, DELETE what is extra; Plan.Batches
// orders them in dependent batches (members, then groups, then table
// entries; deletes the other way round).
package fabric
