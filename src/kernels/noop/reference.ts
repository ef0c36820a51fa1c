import type { ReferenceFn } from '../common/reference.js';

export const noopReference: ReferenceFn = () => ({});
