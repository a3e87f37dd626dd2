// A collection of live processes (analyzer/live/collection.h) in the Prometheus text exposition
// format: for `stats --prometheus`, node_exporter's textfile collector and `vramshim exporter`.
#pragma once

#include <sys/types.h>

#include <set>
#include <string>

#include "analyzer/live/collection.h"

namespace vramshim::cli {

// One # HELP and one # TYPE line per metric, then its samples for every process:
//  - per process and device, every figure of shim/support/device_figures.def the answer holds
//    (vramshim_NAME, counters with _total; null figures are left out) and
//    vramshim_out_of_memory_failures_total;
//  - per process, vramshim_site_live_bytes of its top sites, summed by (kind, site label);
//  - for the collection, vramshim_processes_answered, vramshim_processes_skipped{uid,reason},
//    vramshim_socket_listing_cut{uid} (1 for the uids in `listings_cut`, whose socket directories
//    held more names than shimmed_sockets() looks at; 0 for the others with sockets),
//    vramshim_collection_duration_seconds and vramshim_collection_end_time_seconds.
// Process labels: pid, command (cut at 100 characters), host, and rank and job_id where the process
// names them (`job` is Prometheus's own label for the scrape job). Device labels: device (the
// process's CUDA ordinal) and pci_bus_id (NVML's form, live/pci_bus_id.h) where the answer gives
// it.
std::string to_prometheus(const live::Collection& collection,
                          const std::set<uid_t>& listings_cut = {});

}  // namespace vramshim::cli
