import { hashPassword } from '../../shared/core/passwords.js';

// Usage: npm run hash-password -- '<password>'   (prints the value for dataApiUsers[].passwordHash)
const password = process.argv[2];
if (!password) {
  console.error("usage: npm run hash-password -- '<password>'");
  process.exit(2);
}
console.log(await hashPassword(password));
