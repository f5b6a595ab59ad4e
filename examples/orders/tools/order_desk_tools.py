"""Managed tools of the order desk example, run by CodeAct as `command` tools.

Each call receives its JSON arguments on stdin and prints one JSON value on stdout. A failure is a
non-zero exit with a message on stderr, which CodeAct hands back to the code as a RuntimeError.
"""
import json
import os
import sys
import zlib

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")


def load(name):
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        return json.load(f)


def search_catalog(query, max_results=5, max_price=None):
    words = [w for w in query.lower().split() if w]
    hits = []
    for item in load("catalog.json"):
        text = " ".join([item["name"].lower(), item["category"], *item["tags"]])
        score = sum(1 for w in words if w in text)
        if score == len(words) and (max_price is None or item["price"] <= max_price):
            hits.append((score, item))
    hits.sort(key=lambda h: h[1]["price"])
    return [{"sku": i["sku"], "name": i["name"], "price": i["price"]} for _, i in hits[:max_results]]


def check_inventory(sku):
    inventory = load("inventory.json")
    if sku not in inventory:
        fail(f"unknown SKU {sku!r}")
    entry = inventory[sku]
    return {"sku": sku, "on_hand": entry["on_hand"], "warehouse": entry["warehouse"], "in_stock": entry["on_hand"] > 0}


def create_quote(customer_id, lines):
    customers = load("customers.json")
    if customer_id not in customers:
        fail(f"unknown customer {customer_id!r}; known customers: {', '.join(sorted(customers))}")
    customer = customers[customer_id]
    catalog = {i["sku"]: i for i in load("catalog.json")}
    inventory = load("inventory.json")
    out, subtotal = [], 0.0
    for line in lines:
        sku, qty = line["sku"], line["qty"]
        if sku not in catalog:
            fail(f"unknown SKU {sku!r}")
        if inventory[sku]["on_hand"] < qty:
            fail(f"only {inventory[sku]['on_hand']} of {sku} on hand, {qty} requested")
        amount = round(catalog[sku]["price"] * qty, 2)
        subtotal += amount
        out.append({"sku": sku, "name": catalog[sku]["name"], "qty": qty, "unit_price": catalog[sku]["price"], "amount": amount})
    discount = round(subtotal * customer["discount_pct"] / 100, 2)
    number = "Q-%06d" % (zlib.crc32(json.dumps([customer_id, lines], sort_keys=True).encode()) % 10**6)
    return {
        "quote_id": number,
        "customer": customer["name"],
        "currency": customer["currency"],
        "lines": out,
        "subtotal": round(subtotal, 2),
        "discount": discount,
        "total": round(subtotal - discount, 2),
    }


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(1)


if __name__ == "__main__":
    args = json.load(sys.stdin)
    tool = sys.argv[1]
    result = {"search_catalog": search_catalog, "check_inventory": check_inventory, "create_quote": create_quote}[tool](**args)
    json.dump(result, sys.stdout)
