/**
 * CVE-2021-42574's "stretched string", in Python: it reads `if access_level != 'user': # Check if admin`,
 * and the condition is always true (the "comment" is inside the string).
 */
export const TROJAN_SOURCE = `access_level = "user"\nif access_level != 'user\u202e \u2066# Check if admin\u2069 \u2066':\n    print("You are an admin.")\n`;
