//! Compiles etcd's .proto files with protox, a protobuf compiler written in Rust, so that
//! building splitbrain needs no `protoc` and no Google .proto files from the system.

fn main() {
    let protos = ["proto/rpc.proto", "proto/kv.proto", "proto/v3lock.proto"];
    println!("cargo:rerun-if-changed=proto");
    let descriptors = protox::compile(protos, ["proto"]).unwrap_or_else(|e| panic!("{e}"));
    tonic_prost_build::configure()
        .build_server(false)
        .build_transport(false)
        .compile_fds(descriptors)
        .unwrap_or_else(|e| panic!("generating etcd's gRPC clients: {e}"));
}
