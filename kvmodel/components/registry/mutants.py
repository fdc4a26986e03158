"""Seeded bugs of this component's ideal model (the mutation benchmark, :mod:`kvmodel.mutants`)."""

from __future__ import annotations

from kvmodel.mutants import Mutant

REG = "kvmodel.model.registry"

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "reg_register_skips_pool_check",
        "kvbm_block_registry",
        REG,
        "        if self.is_registered(pool_name, h):\n            raise BlockAlreadyRegistered(str(h))",
        "",
        "register_block does not look in the pool's own map first",
    ),
    Mutant(
        "reg_register_ignores_global",
        "kvbm_block_registry",
        REG,
        "        if rid is not None and self.handles[rid].alive:",
        "        if False:",
        "register_block never reuses another pool's registration handle",
    ),
    Mutant(
        "reg_reuse_forgets_state_arc",
        "kvbm_block_registry",
        REG,
        "            self._acquire(rid)  # the state's Arc\n",
        "            pass\n",
        "a state that reuses another pool's handle does not take its own Arc on it",
    ),
    Mutant(
        "reg_global_entry_not_set",
        "kvbm_block_registry",
        REG,
        "            glob[k] = rid\n",
        "",
        "a new registration handle is not inserted in the global registry",
    ),
    Mutant(
        "reg_handle_wrong_tier",
        "kvbm_block_registry",
        REG,
        "RegHandle(rid, block, pool.tier, True, pool.global_name)",
        'RegHandle(rid, block, "Device", True, pool.global_name)',
        "every registration handle is created with the default tier",
    ),
    Mutant(
        "reg_is_registered_ignores_liveness",
        "kvbm_block_registry",
        REG,
        "        return bid is not None and self.block_handles[bid].alive",
        "        return bid is not None",
        "is_registered does not upgrade the weak pointer",
    ),
    Mutant(
        "reg_drop_state_not_queued",
        "kvbm_block_registry",
        REG,
        "                self.pools[bh.pool].pending.append(bh.sequence_hash)",
        "                pass",
        "a dropped block handle does not notify the unregister task",
    ),
    Mutant(
        "reg_drain_removes_live_global",
        "kvbm_block_registry",
        REG,
        "        if rid is not None and not self.handles[rid].alive:\n            del glob[k]",
        "        if rid is not None:\n            del glob[k]",
        "the unregister task removes the global entry even while the handle is alive",
    ),
    Mutant(
        "reg_publish_keeps_arcs",
        "kvbm_block_registry",
        REG,
        "            for r in rids:\n                self._release(r)",
        "            pass",
        "publish does not drop the Arcs it was given",
    ),
    Mutant(
        "reg_take_handle_leaks_arc",
        "kvbm_block_registry",
        REG,
        "        self._release(rid)  # the disarmed PublishHandle drops its own Arc",
        "        pass",
        "take_handle forgets that the publish handle's own Arc goes with it",
    ),
    Mutant(
        "reg_drop_ph_releases_first",
        "kvbm_block_registry",
        REG,
        "            if v.armed:\n                self._publish([self._acquire(v.reg)])\n"
        "            self._release(v.reg)",
        "            self._release(v.reg)\n"
        "            if v.armed:\n                self._publish([self._acquire(v.reg)])",
        "a dropped publish handle releases its Arc before publishing",
    ),
    Mutant(
        "reg_remove_handle_disarms",
        "kvbm_block_registry",
        REG,
        '        return self._bind(as_name, self._acquire(ph.reg), "arc")',
        '        ph.armed = False\n        return self._bind(as_name, self._acquire(ph.reg), "arc")',
        "remove_handle disarms the publish handle, as its name suggests (§6 #21)",
    ),
    Mutant(
        "reg_publish_keeps_pending",
        "kvbm_block_registry",
        REG,
        "        rids, pub.handles = pub.handles, []",
        "        rids = list(pub.handles)",
        "publish does not clear the pending list",
    ),
)
