# shellcheck shell=bash
# SPDX-License-Identifier: Apache-2.0
#
# containerd-config.sh - the configuration of the containerd that the shim
# tests (tests/integration/containerd-lib.sh) and bench/cri start. Sourced;
# prints files, starts nothing.

# ctd_config_toml DIR SOCKET SANDBOX_IMAGE DEFAULT_HANDLER: a config.toml
# (version 2; the keys as `containerd config default` of 1.6.20 prints
# them) with root, state, temporary files, the opt plugin's directory and
# the CNI configuration under DIR, gRPC on SOCKET (ttrpc on SOCKET.ttrpc),
# and the CRI plugin's runtimes "sdpod" (io.containerd.sdpod.v1) and "runc"
# (io.containerd.runc.v2), DEFAULT_HANDLER the one used when RunPodSandbox
# names none.
ctd_config_toml() {
	local dir=$1 sock=$2 pause=$3 handler=$4
	cat <<-EOF
		version = 2
		root = "$dir/root"
		state = "$dir/state"
		temp = "$dir/tmp"
		# Snapshotters this host cannot have: their start-up errors are noise.
		disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
		                    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

		[grpc]
		  address = "$sock"
		[ttrpc]
		  address = "$sock.ttrpc"
		[debug]
		  level = "${CTD_LOG_LEVEL:-info}"

		[plugins]
		  [plugins."io.containerd.internal.v1.opt"]
		    path = "$dir/opt"
		  [plugins."io.containerd.grpc.v1.cri"]
		    sandbox_image = "$pause"
		    # This VM withholds CAP_SYS_RESOURCE from root: the sandbox's
		    # oom_score_adj of -998 cannot be set (VERIFIED.md).
		    restrict_oom_score_adj = true
		    # Network namespaces bind-mounted under the state directory,
		    # not /var/run/netns, which other tests look at.
		    netns_mounts_under_state_dir = true
		    stream_server_address = "127.0.0.1"
		    stream_server_port = "0"
		    [plugins."io.containerd.grpc.v1.cri".cni]
		      bin_dir = "/usr/lib/cni"
		      conf_dir = "$dir/cni"
		      max_conf_num = 1
		    [plugins."io.containerd.grpc.v1.cri".containerd]
		      snapshotter = "overlayfs"
		      default_runtime_name = "$handler"
		      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.sdpod]
		        runtime_type = "io.containerd.sdpod.v1"
		      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
		        runtime_type = "io.containerd.runc.v2"
	EOF
}

# ctd_cni_conflist: sdpod's network "default" (lib/net/cni.c, sdpod(1)
# NETWORKING) for the CRI plugin's conf_dir: ptp with masquerade,
# host-local leases from 10.77.0.0/16 in sdpod's lease directory (so CRI
# sandboxes and sdpod's own pods never get the same address), portmap,
# firewall.
ctd_cni_conflist() {
	cat <<-'EOF'
		{
		  "cniVersion": "1.0.0",
		  "name": "default",
		  "plugins": [
		    {
		      "type": "ptp",
		      "ipMasq": true,
		      "ipam": {
		        "type": "host-local",
		        "ranges": [ [ { "subnet": "10.77.0.0/16" } ] ],
		        "routes": [ { "dst": "0.0.0.0/0" } ],
		        "dataDir": "/run/sdpod/cni/networks"
		      }
		    },
		    { "type": "portmap", "capabilities": { "portMappings": true } },
		    { "type": "firewall" }
		  ]
		}
	EOF
}
