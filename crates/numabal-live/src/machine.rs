//! The host as a `numabal_model::Machine`, the shape the policy core is given (nodes and
//! their CPUs, cores and SMT siblings, SLIT, memory per node). The memory-model fields
//! (latencies, bandwidths) are not measured: the policies that run live (numad, the static
//! ones) do not read them, and they are set to round placeholders, stated here.

use crate::topology::{LiveError, LiveTopology};
use numabal_model::Machine;
use numabal_model::machine::{
    CoreSpec, CostSpec, MachineSpec, MemorySpec, PerNode, PerPair, TopologySpec,
};
use numabal_model::units::Bytes;
use std::path::Path;

/// Build the host's `Machine`. Hosts the model cannot describe (offline CPUs leaving holes
/// in the CPU ids, memory-only nodes, a different number of SMT siblings per core) are
/// errors naming the field.
pub fn machine_of(root: &Path, t: &LiveTopology) -> Result<Machine, LiveError> {
    let fail = |m: String| LiveError {
        path: root.join("sys/devices/system"),
        message: m,
    };
    let sockets = t.sockets().len().max(1) as u32;
    let tpc = t.threads_per_core().max(1) as u32;
    let ncpus = t.cpus.len() as u32;
    if !ncpus.is_multiple_of(tpc * sockets) {
        return Err(fail(format!(
            "{ncpus} CPUs do not split into {sockets} sockets of whole {tpc}-thread cores"
        )));
    }
    let cores_per_socket = ncpus / tpc / sockets;
    let nodes = t.nodes.len() as u32;
    let nodes_per_socket = if nodes > sockets && nodes.is_multiple_of(sockets) {
        nodes / sockets
    } else {
        1
    };
    let spec = MachineSpec {
        name: "host".into(),
        description: format!("this host, read from {}", root.display()),
        topology: TopologySpec {
            sockets,
            cores_per_socket,
            threads_per_core: tpc,
            nodes_per_socket: if cores_per_socket.is_multiple_of(nodes_per_socket) {
                nodes_per_socket
            } else {
                1
            },
            llcs_per_node: 1,
            node_cpus: Some(t.nodes.iter().map(|n| n.cpus.to_list_string()).collect()),
            memory_per_node: PerNode::Each(
                t.nodes.iter().map(|n| Bytes(n.mem_total_bytes)).collect(),
            ),
            distance: t.nodes.iter().map(|n| n.distance.clone()).collect(),
        },
        // Placeholders (not measured; unused by the live policies).
        memory: MemorySpec {
            local_latency_ns: 100.0,
            latency_ns: None,
            controller_gib_s: PerNode::All(10.0),
            link_gib_s: PerPair::All(10.0),
            queue_scale_ns: 5.0,
            llc_latency_ns: 20.0,
            reserved_per_node: PerNode::All(Bytes(0)),
            node_type: None,
        },
        core: CoreSpec::default(),
        costs: CostSpec::default(),
    };
    Machine::from_spec(spec, &format!("the host under {}", root.display()))
        .map_err(|e| fail(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{fixture, read_topology};

    #[test]
    fn the_guest_fixture_as_a_machine() {
        let dir = tempfile::tempdir().unwrap();
        fixture::guest_2n(dir.path());
        let t = read_topology(dir.path()).unwrap();
        let m = machine_of(dir.path(), &t).unwrap();
        assert_eq!(m.nr_nodes(), 2);
        assert_eq!(m.nodes[1].cpus, numabal_model::Mask::from_ids([2, 3]));
        assert_eq!(m.distance, vec![vec![10, 20], vec![20, 10]]);
        assert_eq!(m.nodes[0].memory_bytes >> 20, 1510);
        assert_eq!(m.cores.len(), 4);
    }
}
