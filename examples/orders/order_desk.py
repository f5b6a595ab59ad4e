# Order desk: Acme Robotics wants 3 ergonomic office chairs and 2 standing desks, each under 600 EUR.
# Find candidates, check stock for all of them at once, and quote the cheapest in-stock option of each.
import asyncio

customer = "ACME-42"
wanted = [("ergonomic office chair", 3), ("standing desk", 2)]

lines = []
for query, qty in wanted:
    candidates = await call_tool("search_catalog", query=query, max_price=600)
    stock = await asyncio.gather(*(call_tool("check_inventory", sku=c["sku"]) for c in candidates))
    available = [c for c, s in zip(candidates, stock) if s["on_hand"] >= qty]
    if not available:
        raise RuntimeError(f"nothing in stock for {query!r} x{qty}")
    best = min(available, key=lambda c: c["price"])
    print(f"{query:>24}: {best['name']} ({best['sku']}) at {best['price']:.2f}, {len(available)}/{len(candidates)} in stock")
    lines.append({"sku": best["sku"], "qty": qty})

quote = await call_tool("create_quote", customer_id=customer, lines=lines)
print(f"Quote {quote['quote_id']} for {quote['customer']}: {quote['total']:.2f} {quote['currency']}")
return quote
