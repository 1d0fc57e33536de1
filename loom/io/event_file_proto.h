#ifndef LOOM_IO_EVENT_FILE_PROTO_H_
#define LOOM_IO_EVENT_FILE_PROTO_H_

// event_file.h with the Event and Summary messages defined, for Loom's own code that builds
// or reads them (the summary writer, the `loom` command, tests). Internal to Loom: not
// installed; event_file.h only declares the messages, so including it needs no protobuf
// headers.
#include "loom/io/event_file.h"
#include "loom/io/proto/event.pb.h"
#include "loom/io/proto/summary.pb.h"

#endif  // LOOM_IO_EVENT_FILE_PROTO_H_
