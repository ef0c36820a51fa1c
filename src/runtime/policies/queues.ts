/** Moved to core (devices use them too); kept so policies keep importing from beside them. */
export { Fifo, Heap } from '../../core/queues.js';
