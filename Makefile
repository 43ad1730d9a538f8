# Every target bootstraps first: with a sourced ROS 2 distribution it uses that, otherwise the
# self-installed environment .venv-$(ACRES_ROS_DISTRO) (jazzy by default, or kilted; see
# tools/bootstrap.sh).
SHELL := /bin/bash
ENV := source ./.acres_env.sh
COLCON_PATHS := --base-paths . --build-base build --install-base install
# colcon test must never hang CI: the whole suite gets this many seconds.
TEST_TIMEOUT_S ?= 2400
# A pytest -m expression: the tests to run (default all), e.g. TEST_MARKS="not ros_free".
TEST_MARKS ?=

.PHONY: bootstrap build test test-unit lint demo bench bench-detail bench-lio learn-curve soak clean

bootstrap:
	@bash tools/bootstrap.sh

# build/ and install/ belong to one environment: switching ACRES_ROS_DISTRO starts them afresh. The
# fake game's LiDAR caster is compiled at the end (once, ~15 s each), into the cache of the source
# tree (what runs from here, the tests' fake games) and of the install (what runs from elsewhere).
build: bootstrap
	@$(ENV) && { [ "$$(cat build/.acres_env 2>/dev/null)" = "$$ACRES_ENV_NAME" ] || rm -rf build install; } && \
	  colcon build $(COLCON_PATHS) --packages-select acres_sim \
	  --event-handlers console_cohesion+ summary+ && echo "$$ACRES_ENV_NAME" > build/.acres_env && \
	  source install/setup.bash && python -m acres_sim.fake_game.world.raycast_compiled && \
	  (cd / && python -m acres_sim.fake_game.world.raycast_compiled)

test: build
	@$(ENV) && source install/setup.bash && \
	  rm -rf build/acres_sim/pytest.xml && \
	  timeout --signal=INT --kill-after=30 $(TEST_TIMEOUT_S) \
	    colcon test $(COLCON_PATHS) --packages-select acres_sim \
	      --event-handlers console_direct+ --pytest-args -ra $(if $(TEST_MARKS),-m "$(TEST_MARKS)") ; \
	  status=$$?; \
	  colcon test-result --test-result-base build/acres_sim --verbose || status=1; \
	  python3 tools/check_test_count.py build/acres_sim/pytest.xml "$(TEST_MARKS)" || status=1; \
	  exit $$status

# The fast part from the source tree: unit tests (no process, socket or graph) and lint checks.
test-unit: bootstrap
	@$(ENV) && python -m pytest -q -p no:cacheprovider test/unit test/lint

lint: bootstrap
	@$(ENV) && python -m flake8 acres_sim harness test launch benchmark tools setup.py

demo: build
	@$(ENV) && source install/setup.bash && bash tools/demo.sh

# One run, side by side: the figures of the performance targets (table on stdout, JSON in build/).
bench: build
	@$(ENV) && source install/setup.bash && python -m benchmark --json build/bench.json $(BENCH_ARGS)

bench-detail: build
	@$(ENV) && source install/setup.bash && for b in benchmark/bench_*.py; do m=$$(basename "$$b" .py); echo "== $$m"; python -m "benchmark.$$m" || exit 1; done

bench-lio: build
	@$(ENV) && source install/setup.bash && python -m pip install --quiet --disable-pip-version-check \
	  -c <(python -m pip freeze --exclude-editable) -r tools/requirements-bench.txt && \
	  python -m benchmark.bench_lio --seconds $${LIO_SECONDS:-100}

# PPO (stable-baselines3) learning a shipped task, its curve beside a random and a constant policy:
# build/learn_curve.png and .json (about 20 min on two cores). Installs the learners' extras first.
learn-curve: export ACRES_LEARN := 1
learn-curve: build
	@$(ENV) && source install/setup.bash && python -m benchmark.learn_curve $(LEARN_ARGS)

soak: build
	@$(ENV) && source install/setup.bash && python -m benchmark.soak --seconds $${SOAK_SECONDS:-900} $(SOAK_ARGS)

clean:
	rm -rf build install log
