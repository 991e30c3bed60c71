#!/bin/sh
# Writes the seed corpus of protocol_fuzz (tests/fuzz/corpus/protocol): envelopes in protobuf text
# format encoded by protoc, plus a few broken frames. Run from anywhere; needs protoc.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
proto_dir=$here/../../core/include/ringmaster/protocol
out=$here/corpus/protocol
mkdir -p "$out"

seed() {  # seed NAME TEXT: one serialized Envelope
  printf '%s\n' "$2" |
    protoc --encode=ringmaster.proto.Envelope -I"$proto_dir" "$proto_dir/ringmaster.proto" \
      >"$out/$1"
}

seed inventory_request 'version: 1 request_id: 1 inventory_request {}'
seed error 'version: 1 request_id: 7 error { code: NOT_FOUND message: "no such job" host: "a1" job: "j" rank: -1 }'
seed prepare_job 'version: 1 request_id: 2 prepare_job { reserve_master_port: true launch {
  job_id: "j1" attempt: 1 name: "demo" launcher: TORCHRUN argv: "python" argv: "train.py"
  env { name: "OMP_NUM_THREADS" value: "1" } ranks { rank: 0 local_rank: 0 } world_size: 2
  metric_patterns { name: "loss" regex: "loss=([-+0-9.eE]+)" }
  metric_patterns { name: "step" regex: "step (\\d+)" }
  spec_yaml: "name: demo\n" backend: "gloo" restart { max_restarts: 2 rejoin_timeout_seconds: 5 }
  gang { agent: "a1" endpoint: "tcp://h1:7070" ranks: 2 } } }'
seed launch_bad_pattern 'version: 1 request_id: 3 launch_job { launch { job_id: "j1"
  metric_patterns { name: "loss" regex: "(\\d+)*z" } metric_patterns { name: "" regex: "((" } } }'
seed stop_job 'version: 1 request_id: 4 stop_job { job_id: "j1" grace_ms: 500 }'
seed read_journal 'version: 1 request_id: 5 read_journal { from_seq: 1 max_records: 100 wait_ms: 10 journal_id: "x" }'
seed journal_batch 'version: 1 request_id: 6 journal_batch { journal_id: "x" next_seq: 3 last_seq: 2
  records: "\010\001\021\000\000\000\000\000\000\360\077\032\001j"
  records: "\377\377" }'
seed read_log 'version: 1 request_id: 8 read_log { job_id: "j1" rank: 1 offset: 10 max_bytes: 4096 }'
seed log_chunk 'version: 1 request_id: 9 log_chunk { data: "hello\n" offset: 0 size: 6 finished: true }'
seed rendezvous_set 'version: 1 request_id: 10 rendezvous_set { job_id: "j1" key: "k" value: "\000\001" }'
seed rendezvous_get 'version: 1 request_id: 11 rendezvous_get { job_id: "j1" key: "k" wait_ms: 100 }'
seed gang_heartbeat 'version: 1 request_id: 12 gang { job_id: "j1" from_agent: "a2" attempt: 1
  heartbeat { ranks { rank: 0 step: 10 idle_seconds: 0.5 activity: "computing" phase: "allreduce" }
  failure { cause: "rank 3 killed" kind: "signalled" rank: 3 signal: 9 step: -1 } } }'
seed restart_job 'version: 1 request_id: 13 restart_job { job_id: "j1" exclude_agent: "a2" reason: "rank 3" }'
seed ack 'version: 1 ack {}'
# Broken: another version, no body, a body cut short, garbage.
seed version_2 'version: 2 request_id: 1 inventory_request {}'
seed no_body 'version: 1 request_id: 1'
head -c 40 "$out/prepare_job" >"$out/truncated_launch"
printf '\010\001\022\377\377\377\377\377\377\377\377\377\377' >"$out/overlong_varint"
printf '\010\001\142\377\377\377\017\001' >"$out/huge_length"
printf '\010\001\122\003\012\001\377' >"$out/invalid_utf8_string"
printf 'GET / HTTP/1.1\r\n\r\n' >"$out/garbage"
printf '\010\001\232\006\000\370\007\001\322\001\000' >"$out/unknown_fields"
