/**
 * The KV-cache ops of GPT inference (src/nn/inference/): kv_append writes each row's key and value into
 * its sequence's cache slot, kv_attention attends each query row to its own sequence's cached keys up to
 * its position, embedding_at embeds tokens at explicit positions, gather_rows picks rows (the last token
 * of each sequence before the LM head). See docs/deep-learning-ops.md.
 */
import { bytesPerElement } from '../../core/dtype.js';
import { numel } from '../../core/shape.js';
import type { KernelDef } from '../kernel.js';
import { checkScalarNames } from '../common/scalars.js';
import { requireFloat, requireRank, requireSameDType } from '../common/validate.js';
import { checkArgNames } from '../common/validate.js';
import { KV_ATTENTION_SCALARS, expectShape, kvDims, kvHeads, requireIndexVector } from './params.js';

export const kvAppendDef: KernelDef = {
  name: 'kv_append',
  args: [
    { name: 'qkv', mode: 'r' },
    { name: 'slot', mode: 'r' },
    { name: 'pos', mode: 'r' },
    { name: 'kcache', mode: 'rw' },
    { name: 'vcache', mode: 'rw' },
  ],
  validate(args, scalars) {
    checkArgNames('kv_append', kvAppendDef.args, args);
    checkScalarNames('kv_append', scalars, []);
    kvDims('kv_append', args);
  },
  cost(args) {
    const d = kvDims('kv_append', args);
    return { flops: 0, bytes: 4 * d.rows * d.width * bytesPerElement(args.qkv!.dtype) + 8 * d.rows };
  },
};

export const kvAttentionDef: KernelDef = {
  name: 'kv_attention',
  args: [
    { name: 'qkv', mode: 'r' },
    { name: 'slot', mode: 'r' },
    { name: 'pos', mode: 'r' },
    { name: 'kcache', mode: 'r' },
    { name: 'vcache', mode: 'r' },
    { name: 'y', mode: 'w' },
  ],
  validate(args, scalars) {
    checkArgNames('kv_attention', kvAttentionDef.args, args);
    checkScalarNames('kv_attention', scalars, KV_ATTENTION_SCALARS);
    const d = kvDims('kv_attention', args);
    kvHeads('kv_attention', d.width, scalars);
    requireSameDType('kv_attention', ['qkv', 'y'], args);
    expectShape('kv_attention', 'y', args.y!, [d.rows, d.width]);
  },
  cost(args) {
    // Unknown positions on the host: charged as if every row read half its slot.
    const d = kvDims('kv_attention', args);
    const keys = d.rows * Math.max(1, d.positions / 2);
    return { flops: 4 * keys * d.width, bytes: 2 * keys * d.width * bytesPerElement(args.qkv!.dtype) };
  },
};

export const embeddingAtDef: KernelDef = {
  name: 'embedding_at',
  args: [
    { name: 'ids', mode: 'r' },
    { name: 'pos', mode: 'r' },
    { name: 'wte', mode: 'r' },
    { name: 'wpe', mode: 'r' },
    { name: 'y', mode: 'w' },
  ],
  validate(args, scalars) {
    checkArgNames('embedding_at', embeddingAtDef.args, args);
    checkScalarNames('embedding_at', scalars, []);
    const rows = requireIndexVector('embedding_at', 'ids', args.ids!);
    requireIndexVector('embedding_at', 'pos', args.pos!, rows);
    requireFloat('embedding_at', 'wte', args.wte!);
    requireRank('embedding_at', 'wte', args.wte!, 2);
    requireRank('embedding_at', 'wpe', args.wpe!, 2);
    requireSameDType('embedding_at', ['wte', 'wpe', 'y'], args);
    const cols = args.wte!.shape[1]!;
    expectShape('embedding_at', 'wpe', args.wpe!, [args.wpe!.shape[0]!, cols]);
    expectShape('embedding_at', 'y', args.y!, [rows, cols]);
  },
  cost(args) {
    const n = numel(args.y!.shape);
    return { flops: n, bytes: 3 * n * bytesPerElement(args.y!.dtype) + 8 * args.ids!.shape[0]! };
  },
};

export const gatherRowsDef: KernelDef = {
  name: 'gather_rows',
  args: [
    { name: 'x', mode: 'r' },
    { name: 'index', mode: 'r' },
    { name: 'y', mode: 'w' },
  ],
  validate(args, scalars) {
    checkArgNames('gather_rows', gatherRowsDef.args, args);
    checkScalarNames('gather_rows', scalars, []);
    requireFloat('gather_rows', 'x', args.x!);
    requireRank('gather_rows', 'x', args.x!, 2);
    const rows = requireIndexVector('gather_rows', 'index', args.index!);
    requireSameDType('gather_rows', ['x', 'y'], args);
    expectShape('gather_rows', 'y', args.y!, [rows, args.x!.shape[1]!]);
  },
  cost(args) {
    return { flops: 0, bytes: 2 * numel(args.y!.shape) * bytesPerElement(args.y!.dtype) };
  },
};
