/**
 * The CUDA rows of the copy table: host → GPU, GPU → host and GPU → GPU (same device: a copy on its
 * compute stream; between GPUs: peer-to-peer or staged through pinned host memory, see peer.ts).
 */
import { TandemError } from '../../core/errors.js';
import type { CopyRoute, DeviceBuffer, HostBuffer } from '../device.js';
import { CudaBuffer } from './memory-node.js';
import type { CudaDevice } from './cuda-device.js';
import type { PeerLinks } from './peer.js';

function isHost(b: DeviceBuffer): b is HostBuffer {
  return (b as Partial<HostBuffer>).sab instanceof SharedArrayBuffer;
}

export function cudaCopyRoutes(devices: readonly CudaDevice[], peers: PeerLinks | null = null): CopyRoute[] {
  const owner = (b: DeviceBuffer): CudaDevice => {
    const d = b instanceof CudaBuffer ? devices.find((x) => x.node === b.node) : undefined;
    if (!d)
      throw new TandemError(
        'TANDEM_ERR_INTERNAL',
        `buffer of node ${b.node.name} is not CUDA memory of this backend`,
      );
    return d;
  };
  const hostCheck = (b: DeviceBuffer): HostBuffer => {
    if (!isHost(b))
      throw new TandemError(
        'TANDEM_ERR_INTERNAL',
        `buffer of node ${b.node.name} is not a host SharedArrayBuffer`,
      );
    return b;
  };
  return [
    {
      from: 'host',
      to: 'cuda',
      engine: (_src, dst) => `${owner(dst).id}.h2d`,
      copy: (src, dst, bytes, done) => owner(dst).upload(hostCheck(src), dst as CudaBuffer, bytes, done),
    },
    {
      from: 'cuda',
      to: 'host',
      engine: (src) => `${owner(src).id}.d2h`,
      copy: (src, dst, bytes, done) => owner(src).download(src as CudaBuffer, hostCheck(dst), bytes, done),
    },
    {
      from: 'cuda',
      to: 'cuda',
      engine: (src, dst) => {
        const a = owner(src);
        const b = owner(dst);
        return a === b ? `${a.id}.compute` : `${a.id}.d2h`;
      },
      copy: (src, dst, bytes, done) => {
        const a = owner(src);
        const b = owner(dst);
        if (peers) return peers.copy(a, src as CudaBuffer, b, dst as CudaBuffer, bytes, done);
        if (b !== a) {
          queueMicrotask(() =>
            done(new TandemError('TANDEM_ERR_INTERNAL', 'copies between GPUs need the peer links (peer.ts)')),
          );
          return;
        }
        a.copyWithin(src as CudaBuffer, dst as CudaBuffer, bytes, done);
      },
    },
  ];
}
