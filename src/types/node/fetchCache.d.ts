/**
 * Node's fetch takes RequestInit.cache, which @types/node leaves out of its RequestInit (the DOM's has it);
 * the Jupyter connection passes `cache: 'no-store'` to @jupyterlab/services' fetches.
 */
interface RequestInit {
  cache?: 'default' | 'force-cache' | 'no-cache' | 'no-store' | 'only-if-cached' | 'reload';
}
