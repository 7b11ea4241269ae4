import { ApiException } from '@kubernetes/client-node';

/** Whether the API server stored the object: true, or false when it refused it as invalid (422). */
export function apiAccepts(write: Promise<unknown>): Promise<boolean> {
  return write.then(
    () => true,
    (err: unknown) => {
      if (err instanceof ApiException && err.code === 422) return false;
      throw err;
    },
  );
}
