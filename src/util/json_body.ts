/**
 * A request body's JSON text parsed, or invalid_json_body with the parser's
 * message. One place for the code and message: the front parses push and get
 * bodies (front/requests.ts), the coordinator register bodies (coordinator/register.ts).
 */
import { SfError } from '../errors';

export function parseJsonBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new SfError('invalid_json_body', `body is not valid JSON: ${(err as Error).message}`);
  }
}
