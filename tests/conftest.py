import sys
from pathlib import Path

# tests/ holds helper modules (carnet_fixture) imported by the tests.
sys.path.insert(0, str(Path(__file__).parent))
